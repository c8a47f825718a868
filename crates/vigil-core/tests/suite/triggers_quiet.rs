//! Watching costs nothing while nothing happens (issue 33): 24 simulated hours with 20
//! quiet routines — 10 watching files nobody touches, 10 checking a number every 3 hours in
//! the read-only sandbox — make no model request; one condition turning true at hour 13
//! makes exactly one run, at the next check, carrying the check's output as evidence.

use std::time::Duration;

use vigil_core::protocol::{Check, ExecutionMode, RoutineDraft, Trigger};
use vigil_fake_llm::{Script, Step};

use super::routines::rig;

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn twenty_quiet_routines_for_a_day_make_no_model_request_and_one_true_condition_one_run() {
    let (rt, _rx, clock, fake, _dir) =
        rig(Script::steps(vec![]).with_fallback(Step::text("Disk is filling up."))).await;
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("gauges")).unwrap();
    std::fs::create_dir_all(ws.join("watched")).unwrap();
    assert!(rt.start_background());
    let mut checks = Vec::new();
    for i in 0..10 {
        std::fs::write(ws.join(format!("gauges/{i}")), " 42%\n").unwrap();
        let (r, _) = rt
            .add_routine(RoutineDraft {
                title: Some(format!("Gauge {i}")),
                description: Some("Tell me which disk is filling.".into()),
                schedule: Some("3h".into()),
                execution_mode: Some(ExecutionMode::Isolated),
                check: Some(Check {
                    command: format!("cat gauges/{i}"),
                    when: "> 80".into(),
                }),
                ..RoutineDraft::default()
            })
            .await
            .unwrap();
        rt.watch().approve(&r.id).unwrap();
        checks.push(r.id);
        rt.add_routine(RoutineDraft {
            title: Some(format!("Folder {i}")),
            trigger: Some(Trigger::File {
                paths: vec![format!("watched/{i}/")],
                debounce_ms: None,
            }),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    }
    let runs = |rt: &vigil_core::Runtime| checks.iter().map(|id| rt.scheduler().history(id).len()).sum::<usize>();
    let mut ticks = 0;
    for hour in 1..=24 {
        if hour == 13 {
            std::fs::write(ws.join("gauges/7"), " 93%\n").unwrap();
        }
        clock.advance(HOUR);
        rt.scheduler().poke();
        if hour % 3 != 0 {
            continue;
        }
        ticks += 1;
        let mut waited = 0;
        while runs(&rt) < 10 * ticks {
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited += 1;
            assert!(waited < 3000, "the checks of hour {hour} did not finish: {}", runs(&rt));
        }
        if hour < 15 {
            assert_eq!(fake.request_count(), 0, "hour {hour}: quiet checks call no model");
        }
    }
    // The run of hour 15 may still be writing its record.
    for _ in 0..500 {
        if fake.request_count() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "exactly one run");
    let body = requests[0].body.to_string();
    assert!(body.contains("93%") && body.contains("Gauge 7"), "{body}");
}
