// Interactive: the page is loaded and a command went to the app and back.
window.__TAURI_INTERNALS__
  .invoke('ready', { pageMs: performance.now() })
  .then(() => (document.body.dataset.ready = 'true'));
