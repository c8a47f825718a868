// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    vigil_app::started();
    vigil_app::software_drawing();
    vigil_app::run()
}
