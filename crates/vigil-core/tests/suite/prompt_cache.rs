//! Issue 22 item 5: background runs that come back within the hour cache their stable prefix
//! (tools + system) for an hour on Anthropic, so each run reads what the last one wrote
//! instead of writing it again; the cache's reads and writes are in the run's usage and the
//! day's totals. The fake keeps Anthropic's cache rules (5 minutes, or an hour with
//! `ttl: "1h"`) on a clock the test moves.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{Event, HeartbeatSettings, ProviderKind, Usage, WakeReason};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const HALF_HOUR: Duration = Duration::from_secs(30 * 60);

async fn rig(kind: ProviderKind, reply: Step) -> (Runtime, Events, ManualClock, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(reply))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(1_767_225_600_000);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, kind), &clock)));
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- Check that the backup ran.\n").unwrap();
    (rt, rx, clock, fake, dir)
}

/// One interval run; the tokens its `heartbeat` event reports.
async fn interval_run(rt: &Runtime, rx: &mut Events) -> Usage {
    rt.heartbeat_once(WakeReason::Interval).await;
    let usage = std::iter::from_fn(|| rx.try_recv().ok()).find_map(|e| match e.event {
        Event::Heartbeat { usage, .. } => usage,
        _ => None,
    });
    usage.expect("the run reported its tokens")
}

fn cache_control(body: &Value) -> Value {
    body["system"][0]["cache_control"].clone()
}

#[tokio::test]
async fn heartbeat_runs_half_an_hour_apart_read_the_prefix_the_last_one_cached_for_an_hour() {
    let (rt, mut rx, clock, fake, _dir) = rig(ProviderKind::Anthropic, Step::text("HEARTBEAT_OK")).await;
    let first = interval_run(&rt, &mut rx).await;
    clock.advance(HALF_HOUR);
    fake.advance_clock(HALF_HOUR);
    let second = interval_run(&rt, &mut rx).await;
    println!("heartbeat 30 min apart: first {first:?}, second {second:?}");
    assert!(
        first.cache_write_tokens > 500 && first.cache_read_tokens == 0,
        "{first:?}"
    );
    assert_eq!(
        (second.cache_read_tokens, second.cache_write_tokens),
        (first.cache_write_tokens, 0),
        "the second run reads the whole prefix and writes none of it"
    );
    assert!(
        second.input_tokens >= second.cache_read_tokens,
        "input counts the cached part too"
    );
    for request in fake.requests() {
        assert_eq!(cache_control(&request.body), json!({"type": "ephemeral", "ttl": "1h"}));
    }
    let today = rt.heartbeat_view().usage_today;
    assert_eq!(today.cache_read_tokens, second.cache_read_tokens);
    assert_eq!(today.cache_write_tokens, first.cache_write_tokens);

    // The user's own turns keep the default 5 minutes: they come back within it, and an
    // hour's entry costs more to write.
    let before = fake.request_count();
    rt.submit(user("hello"));
    until_finished(&mut rx).await;
    assert_eq!(
        cache_control(&fake.requests()[before].body),
        json!({"type": "ephemeral"})
    );

    // Stretched past an hour (here set so; the idle gate does the same), a run is not worth
    // the dearer hour-long write.
    rt.set_heartbeat_settings(&HeartbeatSettings {
        every: "2h".into(),
        ..HeartbeatSettings::default()
    });
    let before = fake.request_count();
    interval_run(&rt, &mut rx).await;
    assert_eq!(
        cache_control(&fake.requests()[before].body),
        json!({"type": "ephemeral"})
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn openai_compatible_runs_carry_no_cache_marker_and_report_what_the_server_cached_and_charged() {
    let reply = Step::text("HEARTBEAT_OK").with_usage_of(vigil_fake_llm::Usage {
        input_tokens: Some(3200),
        output_tokens: Some(4),
        cached_tokens: Some(3072),
        cost: Some(0.000_417),
    });
    let (rt, mut rx, _clock, fake, _dir) = rig(ProviderKind::Openai, reply).await;
    let used = interval_run(&rt, &mut rx).await;
    assert_eq!(
        used,
        Usage {
            input_tokens: 3200,
            output_tokens: 4,
            cache_read_tokens: 3072,
            cache_write_tokens: 0,
            cost_micro_usd: 417,
        }
    );
    assert!(!fake.requests()[0].body.to_string().contains("cache_control"));
    assert_eq!(rt.heartbeat_view().usage_today.cost_micro_usd, 417);
    rt.shutdown().await;
}
