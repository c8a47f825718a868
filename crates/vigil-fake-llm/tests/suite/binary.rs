//! The `vigil-fake-llm` binary: announce line, log file, exit codes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::*;

const BIN: &str = env!("CARGO_BIN_EXE_vigil-fake-llm");

#[cfg(unix)]
#[tokio::test]
async fn serves_the_script_logs_requests_and_exits_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let log = dir.path().join("requests.jsonl");
    std::fs::write(&script, r#"{"steps": [{"kind": "text", "text": "from file"}]}"#).unwrap();
    let mut child = Command::new(BIN)
        .arg("--script")
        .arg(&script)
        .arg("--log")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .expect("announce line")
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");
    let response = client()
        .post(format!("{base}/v1/messages"))
        .json(&anthropic_body("x"))
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(text.contains(r#""text":"from""#), "{text}");
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = logged.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["path"], "/v1/messages");
    assert_eq!(lines[0]["body"]["max_tokens"], 100);
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success(), "SIGTERM is a clean exit");
}

/// A parent may signal as soon as it has read the announce line (the e2e harness stops
/// its fake that way): the signal is handled, a clean exit, never the default action.
#[cfg(unix)]
#[test]
fn sigterm_right_after_the_announce_line_is_a_clean_exit() {
    for _ in 0..30 {
        let mut child = Command::new(BIN).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("listening on "), "{line}");
        let pid = i32::try_from(child.id()).unwrap();
        // SAFETY: kill(2) on our own child, not yet waited for (its pid is still its own).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = child.wait().unwrap();
        assert!(status.success(), "SIGTERM right after the announce line: {status:?}");
    }
}

#[test]
fn bad_script_files_exit_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let invalid = dir.path().join("bad.json");
    std::fs::write(&invalid, "{\"steps\": [}").unwrap();
    for (path, expect) in [
        (dir.path().join("missing.json"), "cannot read script"),
        (invalid, "invalid script"),
    ] {
        let out = Command::new(BIN).arg("--script").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expect), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(BIN).arg("--port").arg("nope").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
