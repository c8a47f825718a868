use vigil_protocol::{ApprovalDecision, ApprovalKind, ErrorKind, ExecutionMode, Message, Usage, WakeReason};

use super::*;

const SINCE: i64 = 1_700_000_000_000;
const BACK: i64 = SINCE + 3 * 3_600_000;

fn env(at: i64, session: Option<&str>, scope: Scope, source: Source, run: Option<&str>, event: Event) -> EventEnvelope {
    EventEnvelope {
        id: format!("e{at}"),
        ts: at,
        session_id: session.map(Into::into),
        scope,
        source,
        run_id: run.map(Into::into),
        event,
    }
}

/// A continuation in `session`: its notice saved, its turn started and finished.
fn continuation(j: &Journal, session: &str, run: &str, at: i64, stop: StopReason, error: Option<&str>) {
    let notice = Message {
        kind: MessageKind::SystemEvent,
        ..Message::user_text("Exec completed (ab12cd34, code 0) :: ok", at)
    };
    let say = |at, source, event| j.note(&env(at, Some(session), Scope::Primary, source, Some(run), event));
    say(at, Source::System, Event::MessageAppended { message: notice });
    say(
        at,
        Source::Background,
        Event::TurnStarted {
            user_text: "…".into()
        },
    );
    if let Some(message) = error {
        say(
            at + 5,
            Source::Provider,
            Event::Error {
                kind: ErrorKind::Network,
                message: message.into(),
            },
        );
    }
    say(
        at + 10,
        Source::Background,
        Event::TurnFinished {
            stop_reason: stop,
            usage: Usage::default(),
            detail: None,
        },
    );
}

fn heartbeat(j: &Journal, at: i64, status: HeartbeatStatus, detail: Option<&str>, retrying: bool) {
    j.note(&env(
        at,
        Some("heartbeat_session_main"),
        Scope::Heartbeat,
        Source::Heartbeat,
        None,
        Event::Heartbeat {
            reason: WakeReason::Interval,
            status,
            skip_reason: None,
            detail: detail.map(Into::into),
            retrying,
            usage: None,
        },
    ));
}

fn asked(j: &Journal, id: &str, session: &str, at: i64, command: &str) {
    j.note(&env(
        at,
        Some(session),
        Scope::Primary,
        Source::Agent,
        Some("r"),
        Event::ApprovalRequested {
            approval_id: id.into(),
            kind: ApprovalKind::Exec,
            command: command.into(),
            prefix: String::new(),
            cwd: None,
            outside_sandbox: false,
            env: vec![],
            parts: vec![],
            unprovable: None,
            exec_run: None,
            mcp: None,
            expires_at: Some(at + 3_600_000),
        },
    ));
}

fn run(outcome: RunOutcome, finished_at: i64) -> RoutineRun {
    RoutineRun {
        run_id: format!("run{finished_at}"),
        routine_id: "backup".into(),
        mode: ExecutionMode::Isolated,
        due_at: Some(finished_at - 1000),
        started_at: finished_at - 1000,
        finished_at,
        outcome,
        session_id: None,
        summary: None,
        error: None,
        deterministic: false,
        due_count: 1,
        last_due_at: None,
        side_effect: None,
        usage: None,
        evidence: None,
    }
}

fn in_conversation(session: &str, message_ts: Option<i64>, approval_id: Option<&str>) -> AwayTarget {
    AwayTarget::Conversation {
        session_id: session.into(),
        message_ts,
        approval_id: approval_id.map(Into::into),
    }
}

fn line(kind: AwayKind, title: &str, text: &str, at: i64, target: AwayTarget) -> AwayLine {
    AwayLine {
        kind,
        title: title.into(),
        text: text.into(),
        at,
        target,
    }
}

#[test]
fn the_card_says_what_ran_failed_waits_and_was_missed_during_the_absence_only() {
    let j = Journal::default();
    let t = |minutes: i64| SINCE + minutes * 60_000;
    // Before the absence: not on the card.
    continuation(&j, "build", "r0", SINCE - 60_000, StopReason::EndTurn, None);
    heartbeat(&j, SINCE - 60_000, HeartbeatStatus::Failed, Some("old failure"), false);
    continuation(&j, "build", "r1", t(10), StopReason::EndTurn, None);
    continuation(&j, "build", "r2", t(20), StopReason::EndTurn, None);
    continuation(
        &j,
        "main",
        "r3",
        t(30),
        StopReason::Error,
        Some("The provider could not be reached.\nmore"),
    );
    heartbeat(&j, t(40), HeartbeatStatus::OkToken, None, false);
    heartbeat(&j, t(50), HeartbeatStatus::Sent, None, false);
    heartbeat(&j, t(55), HeartbeatStatus::Failed, Some("a retry comes"), true);
    heartbeat(&j, t(56), HeartbeatStatus::Skipped, None, false);
    heartbeat(&j, t(60), HeartbeatStatus::Failed, Some("rate limited"), false);
    asked(&j, "a1", "build", t(70), "make deploy");
    asked(&j, "a2", "build", t(71), "rm -rf dist");
    j.note(&env(
        t(72),
        Some("build"),
        Scope::Primary,
        Source::User,
        Some("r"),
        Event::ApprovalResolved {
            approval_id: "a2".into(),
            decision: ApprovalDecision::Deny,
            expired: false,
        },
    ));
    let routines = [RoutineRuns {
        id: "backup".into(),
        title: "Backup".into(),
        runs: vec![
            run(RunOutcome::Ok, SINCE - 1),
            RoutineRun {
                summary: Some("Copied 3 files.".into()),
                ..run(RunOutcome::Ok, t(15))
            },
            run(RunOutcome::Ok, t(75)),
            RoutineRun {
                summary: Some("All fine.".into()),
                ..run(RunOutcome::Ok, t(80))
            },
            RoutineRun {
                error: Some("rsync: connection refused".into()),
                ..run(RunOutcome::Failed, t(90))
            },
            RoutineRun {
                side_effect: Some("exec: rsync -a ~/ /mnt".into()),
                ..run(RunOutcome::Unknown, t(100))
            },
            RoutineRun {
                due_count: 3,
                ..run(RunOutcome::Missed, t(110))
            },
            run(RunOutcome::Ok, BACK + 1),
        ],
    }];
    let titles = HashMap::from([
        ("build".to_string(), "Build the release".to_string()),
        ("main".to_string(), "Chat".to_string()),
    ]);
    let card = summarize(SINCE, BACK, &j, &routines, &titles).expect("a card");
    let routine = AwayTarget::Routine {
        routine_id: "backup".into(),
    };
    assert_eq!(
        card,
        AwaySummary {
            away_since: SINCE,
            back_at: BACK,
            lines: vec![
                line(AwayKind::Ran, "Backup", "ran 3 times — the last: All fine.", t(80), routine.clone()),
                line(AwayKind::Ran, "Heartbeat", "checked 2 times, reported 1 thing", t(50), in_conversation("main", None, None)),
                line(
                    AwayKind::Ran,
                    "Build the release",
                    "Vigil continued on its own 2 times",
                    t(20) + 10,
                    in_conversation("build", Some(t(10)), None)
                ),
                line(AwayKind::Failed, "Backup", "failed: rsync: connection refused", t(90), routine.clone()),
                line(AwayKind::Failed, "Heartbeat", "failed: rate limited", t(60), in_conversation("main", None, None)),
                line(
                    AwayKind::Failed,
                    "Chat",
                    "a turn Vigil ran on its own failed: The provider could not be reached.",
                    t(30) + 10,
                    in_conversation("main", Some(t(30)), None)
                ),
                line(
                    AwayKind::Unknown,
                    "Backup",
                    "was cut off after exec: rsync -a ~/ /mnt: whether it did its work is unknown — retry or dismiss it",
                    t(100),
                    routine.clone()
                ),
                line(
                    AwayKind::Waiting,
                    "Build the release",
                    "waits for your approval: make deploy",
                    t(70),
                    in_conversation("build", None, Some("a1"))
                ),
                line(AwayKind::Missed, "Backup", "missed 3 times", t(110), routine),
            ],
        }
    );
}

#[test]
fn an_absence_with_nothing_in_it_makes_no_card_and_the_journal_is_bounded() {
    let j = Journal::default();
    assert_eq!(summarize(SINCE, BACK, &j, &[], &HashMap::new()), None);
    for i in 0..(KEEP as i64 + 10) {
        heartbeat(&j, SINCE + i, HeartbeatStatus::OkToken, None, false);
    }
    assert_eq!(j.records().heartbeats.len(), KEEP);
    assert_eq!(j.records().heartbeats.front().map(|h| h.at), Some(SINCE + 10));
    // An approval waiting from before the absence is on the card: it still waits.
    asked(&j, "a1", "job_backup_1", SINCE - 5, "make deploy");
    let card = summarize(BACK, BACK + 1, &j, &[], &HashMap::new()).expect("a card");
    assert_eq!(
        card.lines,
        vec![line(
            AwayKind::Waiting,
            "A routine's job",
            "waits for your approval: make deploy",
            SINCE - 5,
            in_conversation("job_backup_1", None, Some("a1"))
        )]
    );
}
