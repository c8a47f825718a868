//! The sandbox's own tests: the bwrap command line, when a standing sandbox may be used,
//! and what a refusal tells the agent.

use super::*;

fn layout(dir: &Path) -> Layout {
    Layout {
        workspace: dir.join("data/workspace"),
        cwd: dir.join("data/workspace"),
        data_dir: dir.join("data"),
        settings: SandboxSettings::default(),
        attended: true,
        home: None,
        read_only: false,
    }
}

#[test]
fn the_data_folder_is_hidden_after_the_binds_and_the_workspace_inside_it_is_bound_again() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(dir.join("data/workspace")).unwrap();
    std::fs::create_dir_all(dir.join("data/sessions")).unwrap();
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    let mut l = layout(&dir);
    // A writable folder inside the data folder is never bound.
    l.settings.writable = vec![dir.join("cache"), dir.join("data/sessions")];
    l.settings.network = false;
    let args: Vec<String> = arguments(Path::new("/usr/bin/bwrap"), &l)
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let at = |flag: &str, path: &Path| {
        args.windows(2)
            .position(|w| w[0] == flag && w[1] == path.to_string_lossy())
    };
    let hide = at("--tmpfs", &dir.join("data")).expect("data hidden");
    let ws = dir.join("data/workspace");
    assert!(at("--bind", &ws).expect("workspace bound") > hide, "{args:?}");
    assert!(at("--bind", &dir.join("cache")).unwrap() < hide);
    assert_eq!(at("--bind", &dir.join("data/sessions")), None, "{args:?}");
    // The network namespace and the socket filter come from the launcher, on every path;
    // without the network allowed it starts no slirp4netns.
    assert!(!args.iter().any(|a| a == "--share-net"), "{args:?}");
    let plain: Vec<OsString> = vec!["/h".into(), "launch".into(), "--".into()];
    assert_eq!(launcher(Path::new("/h"), false, false), plain);
    assert_eq!(args.last().unwrap(), "--");
    // A user namespace of its own with no capability in it, whoever runs Vigil: as root,
    // bwrap keeps every capability unless told, and a command could unmount the cover over
    // the data folder.
    let namespaces = ["--unshare-user", "--cap-drop", "ALL"];
    assert!(args.windows(3).any(|w| w == namespaces), "{args:?}");
}

/// The helper keeps capabilities while it starts commands: one that a command could
/// replace (it lies in a writable folder) is never used, nor is a layout whose writable
/// folders the private /tmp, /var/tmp or /dev/shm of each command would cover.
#[cfg(target_os = "linux")]
#[test]
fn no_zygote_with_a_helper_a_command_could_replace_or_a_folder_it_would_cover() {
    // Outside /tmp (a clone under /tmp, as CI's, would make every layout fall back).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = if manifest.starts_with("/tmp") || manifest.starts_with("/var/tmp") {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        home.join(".cache/vigil-tests")
    } else {
        manifest.to_path_buf()
    };
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(base).unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(dir.join("data/workspace/bin")).unwrap();
    std::fs::create_dir_all(dir.join("app")).unwrap();
    let bwrap = Path::new("/usr/bin/bwrap");
    let l = layout(&dir);
    let zygote = |helper: &Path, l: &Layout| {
        Sandbox::new()
            .with_helper(helper.to_path_buf())
            .zygote(helper, bwrap, l)
    };
    assert!(zygote(&dir.join("app/vigil-sandbox"), &l).is_some());
    assert!(zygote(&dir.join("data/workspace/bin/vigil-sandbox"), &l).is_none());
    let mut extra = l.clone();
    extra.settings.writable = vec![dir.join("app")];
    assert!(zygote(&dir.join("app/vigil-sandbox"), &extra).is_none());
    let mut shm = l.clone();
    shm.settings.writable = vec!["/dev/shm".into()];
    assert!(zygote(&dir.join("app/vigil-sandbox"), &shm).is_none());
}

#[test]
fn a_refusal_names_the_path_and_how_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let l = layout(dir.path());
    let note = explain_refusal("touch: cannot touch '/root/x': Read-only file system\n", &l).unwrap();
    assert!(
        note.contains("(/root/x)") && note.contains("Settings → Approvals"),
        "{note}"
    );
    let note = explain_refusal("bash: /etc/y: Read-only file system", &l).unwrap();
    assert!(note.contains("(/etc/y)"), "{note}");
    assert_eq!(explain_refusal("all good", &l), None);
    let mut offline = l.clone();
    offline.settings.network = false;
    let note = explain_refusal("curl: (6) Could not resolve host: example.com", &offline).unwrap();
    assert!(note.contains("no network"), "{note}");
}
