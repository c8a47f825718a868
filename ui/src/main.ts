import { mount } from 'svelte';
import App from './App.svelte';
import { subscribeEarly } from './lib/ipc';
import './app.css';
// First, so the first paint already uses the last theme chosen.
import './settings/theme.svelte';

// The event subscription is the first round trip every store waits for; asked before the
// window is built, it is answered while the page mounts instead of after.
subscribeEarly();

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

export default mount(App, { target });
