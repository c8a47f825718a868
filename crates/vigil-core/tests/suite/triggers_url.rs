//! A URL trigger (issue 33) against a loopback server the test starts and then stops: no
//! fire while it answers the same, one fire when it goes down, with the change as evidence;
//! nothing is requested before the routine is approved.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vigil_core::protocol::{Action, Event, ProviderKind, RoutineDraft, Trigger};
use vigil_core::sandbox::{Sandbox, SandboxSettings};
use vigil_core::watch::{Watch, WatchDeps};
use vigil_fake_llm::{FakeLlm, Script};

use super::support::*;

/// A server answering `200 ok` to every request, counting them.
async fn server() -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf).await;
                let _ = conn
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    .await;
            });
        }
    });
    (port, hits, task)
}

async fn notifications(rx: &mut Events, quiet: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(Some(env)) = tokio::time::timeout(quiet, rx.recv()).await {
        if let Event::Notification { body, .. } = env.event {
            out.push(body);
        }
    }
    out
}

#[tokio::test]
async fn a_url_that_goes_down_fires_once_and_a_steady_one_never() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let (port, hits, server_task) = server().await;
    let (r, _) = rt
        .add_routine(RoutineDraft {
            title: Some("Site up".into()),
            trigger: Some(Trigger::Url {
                url: format!("http://127.0.0.1:{port}/health"),
                every: Some("1m".into()),
                when: None,
                slower_than_ms: None,
            }),
            action: Some(Action::Notify),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    // Looks every 150 ms instead of every minute.
    let watch = Watch::with_limits(
        WatchDeps {
            scheduler: rt.scheduler().clone(),
            data_dir: rt.data_dir().to_path_buf(),
            workspace: rt.workspace().to_path_buf(),
            sandbox: Arc::new(|| (Sandbox::new(), SandboxSettings::default())),
            home: None,
        },
        12,
        Some(Duration::from_millis(150)),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(watch.clone().run(stop.clone()));

    // Not approved: the user is asked, the server never sees a request.
    let asked = notifications(&mut rx, Duration::from_millis(800)).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    watch.approve(&r.id).unwrap();
    // Steady: several looks, no fire.
    let steady = notifications(&mut rx, Duration::from_millis(1200)).await;
    assert!(
        hits.load(Ordering::SeqCst) >= 3,
        "it looked: {}",
        hits.load(Ordering::SeqCst)
    );
    assert!(steady.is_empty(), "{steady:?}");

    // Down: one fire, with what changed.
    server_task.abort();
    let _ = server_task.await;
    let down = notifications(&mut rx, Duration::from_millis(1500)).await;
    assert_eq!(down.len(), 1, "{down:?}");
    assert!(down[0].contains("Site up"), "{down:?}");
    let history = rt.scheduler().history(&r.id);
    let last = history.last().unwrap();
    assert!(
        last.summary
            .as_deref()
            .unwrap_or("")
            .contains("status 200 → unreachable"),
        "{last:?}"
    );
    assert_eq!(fake.request_count(), 0);
    stop.cancel();
}
