import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
// First, so the first paint already uses the last theme chosen.
import './settings/theme.svelte';

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

export default mount(App, { target });
