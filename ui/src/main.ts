import { mount } from 'svelte';
import App from './App.svelte';
import { startEarly } from './lib/ipc';
import './app.css';
// First, so the first paint already uses the last theme chosen.
import './settings/theme.svelte';

// The conversation and every store's first read are asked for before the window is built,
// so the first paint shows them (ipc.ts, startEarly); a backend that does not answer soon
// does not hold the window.
await Promise.race([startEarly(), new Promise((r) => setTimeout(r, 1000))]);

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

export default mount(App, { target });
