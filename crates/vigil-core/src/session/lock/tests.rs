use super::*;
use crate::session::describe_holder;

#[test]
fn a_record_is_read_even_with_the_tail_of_a_longer_one_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.lock");
    let held = LockHolder {
        pid: 42,
        acquired_at_ms: 7,
    };
    let mut bytes = serde_json::to_vec(&held).unwrap();
    bytes.extend_from_slice(b"000}");
    fs::write(&path, &bytes).unwrap();
    assert_eq!(read_record(&path), Some(held));
}

#[test]
fn a_new_record_replaces_a_longer_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.lock");
    fs::write(
        &path,
        format!("{{\"pid\":1,\"acquired_at_ms\":1,\"note\":\"{}\"}}", "x".repeat(200)),
    )
    .unwrap();
    let locks = locks(dir.path(), 100);
    let guard = locks.acquire_blocking("main").unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let record: LockHolder = serde_json::from_str(&text).expect("only the new record is left");
    assert_eq!(record.pid, std::process::id());
    drop(guard);
}

fn locks(dir: &Path, timeout_ms: u64) -> SessionLocks {
    SessionLocks::new(
        dir,
        LockOptions {
            timeout: Duration::from_millis(timeout_ms),
            max_hold: Duration::from_secs(60),
            poll: Duration::from_millis(5),
        },
        Arc::new(SystemClock),
    )
}

#[test]
fn formats_holder_times() {
    assert_eq!(hms_utc(3_723_000), "01:02:03 UTC");
    assert_eq!(
        describe_holder(Some(&LockHolder {
            pid: 1234,
            acquired_at_ms: 43_201_000
        })),
        "pid 1234 since 12:00:01 UTC"
    );
}

#[test]
fn two_instances_in_one_process_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let a = locks(dir.path(), 100);
    let b = locks(dir.path(), 100);
    let held = a.acquire_blocking("main").unwrap();
    let err = b.acquire_blocking("main").unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("session main is locked by pid {} since ", std::process::id())),
        "{msg}"
    );
    assert!(msg.ends_with("; try again"), "{msg}");
    drop(held);
    b.acquire_blocking("main").unwrap();
}

#[test]
fn clones_share_the_in_process_layer_and_entries_are_cleaned_up() {
    let dir = tempfile::tempdir().unwrap();
    let a = locks(dir.path(), 50);
    let g = a.acquire_blocking("x").unwrap();
    assert!(matches!(
        a.clone().acquire_blocking("x"),
        Err(SessionError::Locked { .. })
    ));
    drop(g);
    assert!(a.inner.local.lock().unwrap().is_empty());
}

#[tokio::test]
async fn async_waiters_queue_behind_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let l = locks(dir.path(), 2_000);
    let g = l.acquire("main").await.unwrap();
    let l2 = l.clone();
    let waiter = tokio::spawn(async move { l2.acquire("main").await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!waiter.is_finished());
    drop(g);
    waiter.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_health_check_counts_waits_timeouts_and_the_locks_held() {
    let dir = tempfile::tempdir().unwrap();
    let l = locks(dir.path(), 2_000);
    let g = l.acquire("main").await.unwrap();
    let other = l.acquire("other").await.unwrap();
    assert_eq!((l.health().held, l.health().acquired, l.health().waited), (2, 2, 0));
    drop(other);
    let l2 = l.clone();
    let waiter = tokio::spawn(async move { l2.acquire("main").await.map(drop) });
    tokio::time::sleep(Duration::from_millis(40)).await;
    drop(g);
    waiter.await.unwrap().unwrap();
    let h = l.health();
    assert_eq!((h.held, h.acquired, h.waited, h.timeouts), (0, 3, 1, 0));
    assert!(h.wait_ms_max >= 30 && h.wait_ms_total == h.wait_ms_max, "{h:?}");

    // Another instance (the file layer) that gives up is a timeout, not an acquisition.
    let held = l.acquire("main").await.unwrap();
    let impatient = locks(dir.path(), 30);
    assert!(impatient.acquire("main").await.is_err());
    drop(held);
    assert_eq!(
        (
            impatient.health().timeouts,
            impatient.health().acquired,
            impatient.health().held
        ),
        (1, 0, 0)
    );
}

#[test]
fn a_deleted_lock_file_is_not_a_held_lock() {
    let dir = tempfile::tempdir().unwrap();
    let l = locks(dir.path(), 100);
    let g = l.acquire_blocking("main").unwrap();
    g.ensure_held().unwrap();
    fs::remove_file(dir.path().join("main.lock")).unwrap();
    assert!(matches!(g.ensure_held(), Err(SessionError::LockLost { .. })));
    // Another instance gets a fresh file although `g` still locks the unlinked one.
    locks(dir.path(), 100).acquire_blocking("main").unwrap();
}
