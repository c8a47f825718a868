//! `vigil-sandbox`: the helper Vigil starts inside bubblewrap to start its sandboxed
//! commands (see `vigil_core::sandbox::zygote`). Not for running by hand.

fn main() {
    #[cfg(target_os = "linux")]
    std::process::exit(vigil_core::sandbox::zygote::serve());
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("vigil-sandbox runs on Linux only");
        std::process::exit(2);
    }
}
