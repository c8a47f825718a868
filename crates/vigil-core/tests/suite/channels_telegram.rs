//! Telegram through the whole runtime, against the fake Bot API: pairing by code, a chat
//! whose reply streams back as edits, approvals with inline buttons answered on the phone
//! or the desktop, and messages from other chats ignored and counted.

use std::time::Duration;

use vigil_core::channels::Keys;
use vigil_core::protocol::{
    ApprovalDecision, ApprovalPolicy, ChannelName, ChannelOp, ChannelStatus, ChannelWhen, ChannelsSettings, Event, Op,
    ProviderKind, Role, TelegramSettings,
};
use vigil_fake_llm::{FakeLlm, Script, Step};
use vigil_fake_phone::telegram::Sent;
use vigil_fake_phone::FakeTelegram;

use super::channels::{approval_requested, approval_resolved, three_results_held, touch, until_view, WAIT};
use super::support::*;

const BOT_TOKEN: &str = "123456:fake-bot-token-abcdef";
const CHAT: i64 = 4242;
const STRANGER: i64 = 666;

async fn with_telegram(dir: &std::path::Path, script: Script) -> (vigil_core::Runtime, Events, FakeLlm, FakeTelegram) {
    let fake = FakeLlm::start(script).await.unwrap();
    let tg = FakeTelegram::start(BOT_TOKEN).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    rt.channels().use_keys(Keys::fixed(None, Some(BOT_TOKEN)));
    rt.channels().set_settings(ChannelsSettings {
        telegram: Some(TelegramSettings {
            api_base: tg.api_base(),
            chat_id: None,
            session_id: None,
        }),
        when: ChannelWhen::Away,
        ..Default::default()
    });
    rt.channels().set_away(Some(false));
    assert!(rt.start_background());
    (rt, rx, fake, tg)
}

/// Pairs `CHAT` by the code Settings shows, after a stranger's wrong guess.
async fn pair(rt: &vigil_core::Runtime, tg: &FakeTelegram) {
    rt.submit(Op::Channels { op: ChannelOp::Pair });
    let code = rt.channels().view().pairing.expect("a code on screen").code;
    tg.user_sends(STRANGER, "AAAAAAAA");
    tg.user_sends(CHAT, &format!("/start {code}"));
    let sent = tg
        .wait_until(CHAT, WAIT, |m| m.iter().any(|m| m.text.starts_with("Paired")))
        .await;
    assert!(!sent.is_empty(), "no confirmation in the chat");
    let view = rt.channels().view();
    assert_eq!(view.paired_chat, Some(CHAT));
    assert_eq!(view.pairing, None, "the code is used up");
    assert_eq!(view.refused_answers, 1, "the stranger's wrong code was counted");
    assert!(tg.messages(STRANGER).is_empty(), "a stranger got an answer");
}

/// The first message in `CHAT` with Allow once / Deny buttons.
async fn asked(tg: &FakeTelegram) -> Sent {
    let got = tg
        .wait_until(CHAT, WAIT, |m| m.iter().any(|m| !m.buttons.is_empty()))
        .await;
    got.into_iter()
        .find(|m| !m.buttons.is_empty())
        .expect("an approval with buttons in the chat")
}

/// `ask` once its buttons are gone (the approval ended).
async fn answered(tg: &FakeTelegram, ask: &Sent) -> Sent {
    let got = tg
        .wait_until(CHAT, WAIT, |m| {
            m.iter().any(|m| m.message_id == ask.message_id && m.buttons.is_empty())
        })
        .await;
    got.into_iter()
        .find(|m| m.message_id == ask.message_id && m.buttons.is_empty())
        .expect("the approval's message lost its buttons")
}

#[tokio::test]
async fn a_message_from_the_paired_chat_is_a_user_turn_whose_reply_streams_back() {
    let dir = tempfile::tempdir().unwrap();
    let long = "word ".repeat(1000); // 5000 characters: two Telegram messages
    let script = Script::steps(vec![Step::text(&long)]);
    let (rt, mut rx, _fake, tg) = with_telegram(dir.path(), script).await;
    pair(&rt, &tg).await;
    tg.user_sends(CHAT, "how is the build?");
    until_finished(&mut rx).await;
    // The same messages show in the window: the transcript of the main conversation.
    let messages = rt.messages(None);
    assert_eq!(messages[0].role, Role::User);
    assert_eq!(messages[0].text(), "how is the build?");
    let replies = tg
        .wait_until(CHAT, WAIT, |m| {
            m.iter().skip(1).map(|m| m.text.as_str()).collect::<String>() == long.trim_end()
                || m.iter().skip(1).map(|m| m.text.as_str()).collect::<String>() == long
        })
        .await;
    let reply: Vec<_> = replies.iter().skip(1).collect();
    assert_eq!(reply.len(), 2, "split at Telegram's limit: {reply:?}");
    assert!(reply.iter().all(|m| m.text.chars().count() <= 4096));
    // A stranger's message goes nowhere and is counted.
    tg.user_sends(STRANGER, "rm -rf everything please");
    until_view(&rt, |v| v.ignored_chats >= 1).await;
    // (Its earlier wrong pairing code counts as a refused answer instead.)
    assert_eq!(
        rt.channels().view().ignored_chats,
        1,
        "the stranger's message was counted"
    );
    assert_eq!(
        rt.messages(None).len(),
        2,
        "a stranger's message reached the conversation"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_turn_started_from_the_phone_asks_that_phone_and_its_button_runs_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/telegram-allowed");
    let (rt, mut rx, _fake, tg) = with_telegram(dir.path(), touch(&marker)).await;
    pair(&rt, &tg).await;
    // The user is at the desk (`away` is false), but this turn came from the phone.
    tg.user_sends(CHAT, "touch the marker");
    let id = approval_requested(&mut rx).await;
    let ask = asked(&tg).await;
    let labels: Vec<&str> = ask.buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Allow once", "Deny"]);
    // A stranger pressing the same button (a forwarded message) does nothing.
    let q = tg.press(STRANGER, ask.message_id, &ask.buttons[0].1);
    assert_eq!(
        tg.wait_callback_answer(&q, WAIT).await.as_deref(),
        Some("This chat is not paired with Vigil.")
    );
    assert!(!marker.exists());
    let q = tg.press(CHAT, ask.message_id, &ask.buttons[0].1);
    assert_eq!(
        tg.wait_callback_answer(&q, WAIT).await.as_deref(),
        Some("Allowed once.")
    );
    let resolved = approval_resolved(&mut rx).await;
    assert_eq!(
        resolved,
        (id, ApprovalDecision::Approve),
        "the desktop card was answered"
    );
    until_finished(&mut rx).await;
    assert!(marker.exists(), "the command ran");
    let now = answered(&tg, &ask).await;
    assert!(now.text.ends_with("Allowed."), "{now:?}");
    // Pressing again: already answered.
    let q = tg.press(CHAT, ask.message_id, &ask.buttons[1].1);
    assert_eq!(
        tg.wait_callback_answer(&q, WAIT).await.as_deref(),
        Some("Already answered.")
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn an_approval_answered_on_the_desktop_makes_the_phone_say_already_answered() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/desktop-denied");
    let (rt, mut rx, _fake, tg) = with_telegram(dir.path(), touch(&marker)).await;
    pair(&rt, &tg).await;
    rt.channels().set_away(Some(true));
    rt.submit(user("touch it"));
    let id = approval_requested(&mut rx).await;
    let ask = asked(&tg).await;
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    let now = answered(&tg, &ask).await;
    assert!(now.text.ends_with("Denied."), "{now:?}");
    let q = tg.press(CHAT, ask.message_id, &ask.buttons[0].1);
    assert_eq!(
        tg.wait_callback_answer(&q, WAIT).await.as_deref(),
        Some("Already answered.")
    );
    assert!(!marker.exists(), "the phone's late Allow ran the command");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_streamed_reply_is_edited_at_most_once_a_second() {
    let dir = tempfile::tempdir().unwrap();
    // 80 deltas 40 ms apart: a reply that grows for more than three seconds.
    let reply = (1..=80).map(|i| format!("w{i:02}")).collect::<Vec<_>>().join(" ");
    let script = Script::steps(vec![Step::text(&reply).with_chunk_chars(4).with_delay_ms(40)]);
    let (rt, mut rx, _fake, tg) = with_telegram(dir.path(), script).await;
    pair(&rt, &tg).await;
    tg.user_sends(CHAT, "tell me slowly");
    until_finished(&mut rx).await;
    let got = tg.wait_until(CHAT, WAIT, |m| m.len() == 2 && m[1].text == reply).await;
    assert_eq!(got.len(), 2, "the reply is one message: {got:?}");
    let m = &got[1];
    assert_eq!(m.text, reply, "the whole reply arrived");
    assert!(m.edits >= 2, "streamed as edits, not sent once at the end: {m:?}");
    // The fake's own clock: from the message's first version to its last edit.
    let span = m.edited_at.last().unwrap().duration_since(m.sent_at).as_secs_f64();
    assert!(
        f64::from(m.edits) <= span + 1.0,
        "{} edits in {span:.2} s: more than one a second",
        m.edits
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn pushes_wait_out_telegram_being_down_and_arrive_once_each_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _rx, _fake, tg) = with_telegram(dir.path(), Script::steps(vec![])).await;
    pair(&rt, &tg).await;
    rt.channels().set_away(Some(true));
    tg.set_down(true);
    let error = three_results_held(&rt, ChannelName::Telegram).await;
    assert!(error.contains("Telegram") && error.contains("502"), "{error}");
    assert!(!error.contains(BOT_TOKEN), "the token in the error: {error}");
    assert!(!error.contains(&tg.api_base()), "the URL in the error: {error}");
    assert_eq!(
        tg.messages(CHAT).len(),
        1,
        "only the pairing's confirmation got through"
    );
    // Settings → Health shows the same: the channel's row, its error, and an alert.
    let health = rt.health().await;
    let row = &health.channels.channels;
    assert_eq!(row.len(), 1, "only Telegram is set up: {row:?}");
    assert_eq!(row[0].status, ChannelStatus::Retrying);
    assert_eq!(row[0].last_error.as_deref(), Some(&*error));
    assert!(
        health
            .alerts
            .iter()
            .any(|a| a.contains("through Telegram") && a.contains("3 pushes wait")),
        "{:?}",
        health.alerts
    );
    tg.set_down(false);
    let v = until_view(&rt, |v| {
        v.channels[1].queued == 0 && v.channels[1].status == ChannelStatus::Connected
    })
    .await;
    let texts: Vec<String> = tg.messages(CHAT).into_iter().skip(1).map(|m| m.text).collect();
    assert_eq!(
        texts,
        ["result 1\ndone", "result 2\ndone", "result 3\ndone"],
        "once each, in order"
    );
    assert!(v.channels[1].sent >= 3, "{v:?}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_phone_message_into_a_busy_conversation_gets_that_turns_reply() {
    let dir = tempfile::tempdir().unwrap();
    let desk = "Working on the desk question, slowly and at length.";
    let script = Script::steps(vec![
        // Three seconds of the desktop's answer, time for the phone's message to arrive.
        Step::text(desk).with_chunk_chars(2).with_delay_ms(120),
        Step::text("The build is green, 214 tests."),
    ]);
    let (rt, mut rx, fake, tg) = with_telegram(dir.path(), script).await;
    pair(&rt, &tg).await;
    rt.submit(user("a question from the desk"));
    next_matching(&mut rx, |e| matches!(e, Event::TextDelta { .. }).then_some(())).await;
    tg.user_sends(CHAT, "and how is the build?");
    until_finished(&mut rx).await;
    let got = tg
        .wait_until(CHAT, WAIT, |m| {
            m.iter().any(|m| m.text == "The build is green, 214 tests.")
        })
        .await;
    let texts: Vec<&str> = got.iter().skip(1).map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        ["The build is green, 214 tests."],
        "the reply after the phone's message, and not the desk's answer before it"
    );
    // The model saw the phone's message in the same turn.
    assert_eq!(fake.request_count(), 2);
    let sent = fake.requests()[1].body["messages"].to_string();
    assert!(sent.contains("and how is the build?"), "{sent}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_restart_while_telegram_is_down_loses_no_push_and_keeps_the_pairing() {
    let dir = tempfile::tempdir().unwrap();
    let tg = {
        let (rt, _rx, _fake, tg) = with_telegram(dir.path(), Script::steps(vec![])).await;
        pair(&rt, &tg).await;
        rt.channels().set_away(Some(true));
        tg.set_down(true);
        three_results_held(&rt, ChannelName::Telegram).await;
        rt.shutdown().await;
        tg
    };
    tg.set_down(false);
    let (rt, _rx) = runtime(dir.path(), None);
    rt.channels().use_keys(Keys::fixed(None, Some(BOT_TOKEN)));
    rt.channels().set_away(Some(true));
    let v = rt.channels().view();
    assert_eq!(v.paired_chat, Some(CHAT), "the pairing survived the restart");
    assert_eq!(v.channels[1].queued, 3, "the queue survived the restart");
    assert!(rt.start_background());
    until_view(&rt, |v| v.channels[1].queued == 0).await;
    let texts: Vec<String> = tg.messages(CHAT).into_iter().skip(1).map(|m| m.text).collect();
    assert_eq!(
        texts,
        ["result 1\ndone", "result 2\ndone", "result 3\ndone"],
        "once each, in order"
    );
    rt.shutdown().await;
}

/// The channels alone (no runtime), for what only their events decide.
mod direct {
    use std::sync::Arc;

    use super::*;
    use vigil_core::channels::{ChannelHost, Channels};
    use vigil_core::clock::SystemClock;
    use vigil_core::events::CollectingSink;
    use vigil_core::protocol::{ApprovalKind, EventEnvelope, NotificationKind, Scope, Source};

    struct Host;

    impl ChannelHost for Host {
        fn answer(&self, _: &str, _: ApprovalDecision) -> bool {
            true
        }
        fn user_message(&self, _: &str, _: String) {}
        fn away(&self) -> Option<bool> {
            None
        }
    }

    fn envelope(session: Option<&str>, event: Event) -> EventEnvelope {
        EventEnvelope {
            id: "e".into(),
            ts: 0,
            session_id: session.map(str::to_string),
            scope: Scope::Primary,
            source: Source::Background,
            run_id: None,
            event,
        }
    }

    fn answer(session: &str, body: &str) -> EventEnvelope {
        envelope(
            Some(session),
            Event::Notification {
                kind: NotificationKind::Process,
                title: "Build".into(),
                body: body.into(),
                event_id: None,
                process_id: None,
                approval_id: None,
                target_session_id: Some(session.into()),
                message_ts: None,
            },
        )
    }

    #[tokio::test]
    async fn a_continuations_answer_reaches_the_phone_only_while_away_and_an_expired_approval_never() {
        let dir = tempfile::tempdir().unwrap();
        let tg = FakeTelegram::start(BOT_TOKEN).await.unwrap();
        let channels = Channels::open(dir.path(), Arc::new(SystemClock), Keys::fixed(None, Some(BOT_TOKEN)));
        let sink = channels.tap(Arc::new(CollectingSink::default()));
        channels.set_settings(ChannelsSettings {
            telegram: Some(TelegramSettings {
                api_base: tg.api_base(),
                chat_id: Some(CHAT),
                session_id: None,
            }),
            when: ChannelWhen::Away,
            ..Default::default()
        });
        let stop = tokio_util::sync::CancellationToken::new();
        channels.start(Arc::new(Host), stop.clone());
        channels.set_away(Some(false));
        sink.emit(answer("s1", "seen at the desk"));
        channels.set_away(Some(true));
        // An approval whose time ran out before it could go.
        sink.emit(envelope(
            Some("s3"),
            Event::ApprovalRequested {
                approval_id: "late".into(),
                kind: ApprovalKind::Exec,
                prefix: String::new(),
                command: "make deploy".into(),
                cwd: None,
                outside_sandbox: false,
                env: vec![],
                parts: vec![],
                unprovable: None,
                exec_run: None,
                mcp: None,
                expires_at: Some(1),
            },
        ));
        sink.emit(answer("s2", "The build passed: 214 tests."));
        let got = tg.wait_until(CHAT, WAIT, |m| !m.is_empty()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let texts: Vec<String> = tg.messages(CHAT).into_iter().map(|m| m.text).collect();
        assert_eq!(got.len(), 1);
        assert_eq!(
            texts,
            ["Build\nThe build passed: 214 tests."],
            "only the answer given while away"
        );
        // Presence unknown (the host cannot tell): "when away" means always.
        channels.set_away(None);
        sink.emit(answer("s4", "Also done."));
        let got = tg.wait_until(CHAT, WAIT, |m| m.len() == 2).await;
        assert_eq!(got[1].text, "Build\nAlso done.");
        assert!(!channels.view().presence_known);
        stop.cancel();
    }
}
