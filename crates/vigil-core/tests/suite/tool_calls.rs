//! The order the tool calls of one model response run in: calls that only read overlap,
//! anything that changes something runs alone, in the model's order (issue 31 item 1).

use serde_json::json;
use vigil_core::protocol::{ApprovalPolicy, Event, ProviderKind, StopReason};
use vigil_fake_llm::{FakeLlm, Script, Step, ToolCall};

use super::support::*;

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// `started c` / `finished c` for each tool event, in the order the runtime emitted them
/// (one channel, so this is the order the calls began and ended in).
fn tool_timeline(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call_id, .. } => Some(format!("started {call_id}")),
            Event::ToolCallFinished { call_id, .. } => Some(format!("finished {call_id}")),
            _ => None,
        })
        .collect()
}

/// What each call gave the model, as (call id, content, is_error), in event order.
fn finished(events: &[Event]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn ended_normally(events: &[Event]) -> bool {
    matches!(
        events.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    )
}

#[tokio::test]
async fn two_edits_of_one_file_in_one_response_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_calls(vec![
            call(
                "e1",
                "edit",
                json!({"path": "f.txt", "old_text": "one", "new_text": "ONE"}),
            ),
            call(
                "e2",
                "edit",
                json!({"path": "f.txt", "old_text": "two", "new_text": "TWO"}),
            ),
        ]),
        Step::text("both changed"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    std::fs::write(rt.workspace().join("f.txt"), "one\ntwo\n").unwrap();
    rt.submit(user("capitalise both lines"));
    let events = until_finished(&mut rx).await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(
        std::fs::read_to_string(rt.workspace().join("f.txt")).unwrap(),
        "ONE\nTWO\n",
        "both edits are in the file"
    );
    // Each card's diff is what that call changed: the second edit saw the first one's work.
    let head = "Edited f.txt: replaced 1 occurrence (+1 −1 lines).\n\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n";
    assert_eq!(
        finished(&events),
        [
            ("e1".to_string(), format!("{head}-one\n+ONE\n two\n"), false),
            ("e2".to_string(), format!("{head} ONE\n-two\n+TWO\n"), false),
        ]
    );
    assert_eq!(
        tool_timeline(&events),
        ["started e1", "finished e1", "started e2", "finished e2"]
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_command_that_makes_a_folder_runs_before_a_write_into_it() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_calls(vec![
            call("mk", "exec", json!({"command": "mkdir x"})),
            call("w", "write", json!({"path": "x/y", "content": "y\n"})),
        ]),
        Step::text("made it"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    assert!(rt.start_background(), "exec is offered once background work runs");
    rt.submit(user("make x and put y in it"));
    let events = until_finished(&mut rx).await;
    assert!(ended_normally(&events), "{events:?}");
    assert_eq!(
        tool_timeline(&events),
        ["started mk", "finished mk", "started w", "finished w"]
    );
    let results = finished(&events);
    let (_, mkdir, mkdir_failed) = &results[0];
    assert!(
        !mkdir_failed && !mkdir.contains("exited with code"),
        "mkdir ran first, on a workspace without x: {mkdir}"
    );
    assert_eq!(
        results[1],
        (
            "w".to_string(),
            "Wrote 2 bytes (1 line) to x/y (new file).".to_string(),
            false
        )
    );
    assert_eq!(std::fs::read_to_string(rt.workspace().join("x/y")).unwrap(), "y\n");
    rt.shutdown().await;
}

/// Three reads of FIFOs, then a write. Each read blocks inside its FIFO until the test feeds
/// it, so the test can look at the moment all three are in progress: holding all three
/// FIFOs' write ends at once, each opened only because a reader was there (`O_NONBLOCK`
/// fails with `ENXIO` without one), proves the reads overlap; that no `write` has started
/// while they are stuck, and that its start event follows all three finish events on the
/// one event channel, proves it waited for them. (The envelopes' `ts` come from the test's
/// manual clock, so the channel's order is the finer timestamp here.)
#[cfg(unix)]
#[tokio::test]
async fn reads_overlap_and_a_write_after_them_waits_for_all_of_them() {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::Duration;

    let names = ["p1", "p2", "p3"];
    let dir = Unstick::new(tempfile::tempdir().unwrap(), &names);
    let mut calls: Vec<ToolCall> = names
        .iter()
        .map(|n| call(&format!("r_{n}"), "read", json!({"path": n})))
        .collect();
    calls.push(call("w", "write", json!({"path": "after.txt", "content": "after\n"})));
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_calls(calls),
        Step::text("read and wrote"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let fifos = dir.fifos.clone();
    for fifo in &fifos {
        let made = std::process::Command::new("mkfifo").arg(fifo).status().unwrap();
        assert!(made.success());
    }
    rt.submit(user("read the three pipes, then write"));

    // The write end of `fifo`, once a reader has it open (10 s at most: only a failure waits).
    async fn writer_once_read(fifo: &std::path::Path) -> std::fs::File {
        let open = || {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(fifo)
        };
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match open() {
                    Ok(f) => return f,
                    Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "nobody started reading {} while the other reads were held",
                fifo.display()
            )
        })
    }
    let mut held = Vec::new();
    for fifo in &fifos {
        held.push(writer_once_read(fifo).await);
    }
    // All three reads are in progress now, none can end: the write must not have begun.
    let mut events = Vec::new();
    while let Ok(env) = rx.try_recv() {
        events.push(env.event);
    }
    let early = tool_timeline(&events);
    assert!(
        !early.contains(&"started w".to_string()),
        "the write started while the reads were still running: {early:?}"
    );
    assert!(!rt.workspace().join("after.txt").exists());

    // `read` opens a file twice (a look for an image's magic bytes, then the text): a
    // read-write descriptor keeps each pipe alive between the two, and it is closed (the
    // end of file) once the second open has drained the pipe.
    let mut keep = Vec::new();
    for (fifo, mut w) in fifos.iter().zip(held) {
        let rw = std::fs::OpenOptions::new().read(true).write(true).open(fifo).unwrap();
        w.write_all(b"sixteen bytes...body\n").unwrap();
        keep.push(rw);
    }
    for rw in keep {
        tokio::time::timeout(Duration::from_secs(10), async {
            while rustix::io::ioctl_fionread(&rw).unwrap() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the read drained its pipe");
    }

    events.extend(until_finished(&mut rx).await);
    assert!(ended_normally(&events), "{events:?}");
    let timeline = tool_timeline(&events);
    let at = |what: &str| timeline.iter().position(|t| t == what).unwrap();
    for n in names {
        assert!(
            at(&format!("finished r_{n}")) < at("started w"),
            "the write started before read {n} finished: {timeline:?}"
        );
    }
    let results = finished(&events);
    for n in names {
        assert!(
            results.contains(&(format!("r_{n}"), "     1\tbody".to_string(), false)),
            "{results:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(rt.workspace().join("after.txt")).unwrap(),
        "after\n"
    );
    rt.shutdown().await;
    dir.disarm();
}

/// The test's folder, with the FIFOs `names` in its workspace. A `read` stuck in a FIFO
/// would hang the test's runtime on its way down (it waits for blocking tasks), so if the
/// test fails while one may be stuck, a thread keeps opening and closing every FIFO's write
/// end for a while, which ends any read (end of file), and keeps the folder until then.
#[cfg(unix)]
struct Unstick {
    dir: Option<tempfile::TempDir>,
    fifos: Vec<std::path::PathBuf>,
}

#[cfg(unix)]
impl Unstick {
    fn new(dir: tempfile::TempDir, names: &[&str]) -> Self {
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let fifos = names.iter().map(|n| workspace.join(n)).collect();
        Self { dir: Some(dir), fifos }
    }

    fn path(&self) -> &std::path::Path {
        self.dir.as_ref().unwrap().path()
    }

    /// The test passed: nothing can be stuck, the folder goes now.
    fn disarm(mut self) {
        self.dir.take();
    }
}

#[cfg(unix)]
impl Drop for Unstick {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        let Some(dir) = self.dir.take() else { return };
        let fifos = std::mem::take(&mut self.fifos);
        std::thread::spawn(move || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < until {
                for fifo in &fifos {
                    let _ = std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(fifo);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            drop(dir);
        });
    }
}
