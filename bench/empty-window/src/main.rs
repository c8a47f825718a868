//! An empty Tauri window: the baseline for Vigil's launch time and memory. Its page calls
//! `ready` once loaded; with `VIGIL_REPORT_READY` set, that prints `READY` on stdout, as Vigil
//! does when its window is interactive. Its close button hides the window, as Vigil's does
//! with close to tray (its default), so the idle benchmark can measure both closed.

static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// `page_ms`: when the page called, in ms since its navigation began (printed with the time
/// since the process started, so the two phases can be told apart).
#[tauri::command]
fn ready(page_ms: f64) {
    if std::env::var_os("VIGIL_REPORT_READY").is_some() {
        let ms = STARTED.get().map_or(0, |t| t.elapsed().as_millis());
        println!("READY {ms} ms after start, page {page_ms:.0} ms");
    }
}

fn main() {
    STARTED.get_or_init(std::time::Instant::now);
    tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![ready])
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
            }
        })
        .run(tauri::generate_context!())
        .expect("the empty window could not start");
}
