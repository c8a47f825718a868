//! A Unix socket granted by path (issue 30 §2): the user's own turns reach that socket and
//! no other the host listens on (by path anywhere, under `/run`, or abstract); runs nobody
//! watches and the read-only sandbox reach none, grant or not.

use std::os::unix::net::UnixListener;
use std::path::PathBuf;

use serde_json::json;
use vigil_core::sandbox::SandboxSettings;

use super::support::outside_tmp;
use super::walls::{inside, plant, ready, set};

/// Every path socket the host listens on now (`/proc/net/unix`): the probe tries each.
fn host_sockets() -> Vec<String> {
    std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_granted_socket_is_the_only_one_a_users_turn_reaches() {
    ready();
    for base in [outside_tmp(), tempfile::tempdir().unwrap()] {
        let mut p = plant(base);
        let granted: PathBuf = p.root.join("docker.sock");
        let _docker = UnixListener::bind(&granted).unwrap();
        let mut sockets = host_sockets();
        sockets.push(granted.display().to_string());
        p.request["sockets"] = json!(sockets);
        let settings = SandboxSettings {
            sockets: vec![granted.clone()],
            ..SandboxSettings::default()
        };
        let workspace = format!("W {}", p.workspace.display());
        let mut want = set(&[
            workspace.clone(),
            "P socketpair".into(),
            format!("S {}", granted.display()),
        ]);
        want.extend(p.lan.as_ref().map(|(ip, port)| format!("T {ip}:{port}")));
        assert_eq!(
            inside(&p, settings.clone(), true).await,
            want,
            "a user's turn with docker.sock granted reached more (or less): the planted {} and every host socket must stay out",
            p.socket.display()
        );
        // Nobody watching: the grant does not apply; no socket at all.
        assert_eq!(
            inside(&p, settings, false).await,
            set(&[workspace, "P socketpair".into()]),
            "an unattended run used the grant"
        );
    }
}
