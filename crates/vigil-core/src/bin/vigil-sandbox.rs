//! `vigil-sandbox`: the helper Vigil starts to run its sandboxed commands. With no
//! arguments (as bwrap runs it, inside the sandbox) it is the zygote
//! (`vigil_core::sandbox::zygote`); `launch` (outside, before bwrap) hands bwrap its seccomp
//! filter and network, and `net-relay` attaches slirp4netns (`vigil_core::sandbox::launch`).
//! Not for running by hand.

fn main() {
    #[cfg(target_os = "linux")]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        let code = match args.first().and_then(|a| a.to_str()) {
            Some("launch") => vigil_core::sandbox::launch::main(&args[1..]),
            Some("net-relay") => match args.get(1) {
                Some(slirp) => vigil_core::sandbox::launch::relay(slirp),
                None => 2,
            },
            _ => vigil_core::sandbox::zygote::serve(),
        };
        std::process::exit(code);
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("vigil-sandbox runs on Linux only");
        std::process::exit(2);
    }
}
