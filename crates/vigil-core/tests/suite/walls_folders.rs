//! Which folders a sandboxed command may write (issue 30 §5): what runs the user's code at
//! the next login stays read-only even inside a workspace that holds the home, and a folder
//! swapped for a symlink after Vigil resolved it is not bound at all.

use serde_json::json;
use vigil_core::sandbox::{Layout, Sandbox, SandboxSettings};

use super::support::outside_tmp;
use super::walls::{context, plant, ready, registry_and_tools};

/// A workspace that is the home itself (the user chose it): its projects are writable, the
/// desktop's autostart, the shells' start-up files and `~/.local/bin` are not, unless the
/// user added them in Settings.
#[tokio::test]
async fn a_workspace_holding_the_home_keeps_what_runs_at_login_read_only() {
    ready();
    for base in [outside_tmp(), tempfile::tempdir().unwrap()] {
        let p = plant(base);
        std::fs::create_dir_all(p.home.join("project")).unwrap();
        std::fs::create_dir_all(p.home.join(".local/bin")).unwrap();
        let (registry, tools) = registry_and_tools();
        let script = "touch project/built; touch .config/autostart/x.desktop; echo evil >> .bashrc; \
                      touch .local/bin/ls; echo done";
        for added in [false, true] {
            let settings = SandboxSettings {
                writable: if added { vec![p.home.join(".config")] } else { vec![] },
                ..SandboxSettings::default()
            };
            let mut ctx = context(&p, settings, false);
            ctx.workspace = p.home.clone();
            let out = tools
                .execute("exec", json!({"command": script, "pty": false}), &ctx)
                .await;
            assert!(out.content.contains("done"), "{}", out.content);
            assert!(
                p.home.join("project/built").exists(),
                "the workspace stays writable: {}",
                out.content
            );
            assert_eq!(
                std::fs::read_to_string(p.home.join(".bashrc")).unwrap(),
                "# the user's\n",
                "a shell start-up file was changed"
            );
            assert!(!p.home.join(".local/bin/ls").exists(), "a program was put on PATH");
            // Added by the user in Settings: then (and only then) it is writable.
            assert_eq!(
                p.home.join(".config/autostart/x.desktop").exists(),
                added,
                "autostart (added: {added}): {}",
                out.content
            );
            let _ = std::fs::remove_file(p.home.join(".config/autostart/x.desktop"));
        }
        registry.shutdown().await;
    }
}

/// The window between Vigil resolving a folder and bwrap binding it: the workspace swapped
/// for a symlink to the home after the command line was made. bwrap gets the folder as the
/// descriptor the launcher opened and checked, so the sandbox does not start and nothing
/// lands in the home.
#[test]
fn a_folder_swapped_for_a_link_after_it_was_checked_is_not_bound() {
    ready();
    let p = plant(tempfile::tempdir().unwrap());
    let layout = Layout {
        workspace: p.workspace.clone(),
        cwd: p.workspace.clone(),
        data_dir: p.data.clone(),
        settings: SandboxSettings::default(),
        attended: true,
        home: Some(p.home.clone()),
        read_only: false,
    };
    let wrapped = Sandbox::new().wrap(&layout).unwrap().without_zygote();
    std::fs::rename(&p.workspace, p.root.join("moved")).unwrap();
    std::os::unix::fs::symlink(&p.home, &p.workspace).unwrap();
    // Whatever else the command line binds beneath the folder is there too.
    std::fs::write(p.home.join("HEARTBEAT.md"), "").unwrap();
    let (program, args) = wrapped.args.split_first().unwrap();
    let out = std::process::Command::new(program)
        .args(args)
        .args(["sh", "-c", "touch planted; echo ran"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !p.home.join("planted").exists(),
        "the write landed in the home: {stderr}"
    );
    assert!(!out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("ran"));
    assert!(stderr.contains("changed after it was checked"), "{stderr}");
}
