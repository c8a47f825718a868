//! The phone channels through the whole runtime, against the fake ntfy server: an approval
//! pushed while the user is away and answered from the phone, forged and replayed answers,
//! a server that goes away and a restart with pushes queued.

use std::time::Duration;

use serde_json::{json, Value};
use vigil_core::channels::Keys;
use vigil_core::protocol::{
    ApprovalDecision, ApprovalPolicy, ChannelName, ChannelStatus, ChannelWhen, ChannelsSettings, ChannelsView, Event,
    NtfySettings, ProviderKind,
};
use vigil_fake_llm::{FakeLlm, Script, Step};
use vigil_fake_phone::FakeNtfy;

use super::support::*;

const NTFY_TOKEN: &str = "tk_fakeaccesstoken0123456789";
const TG_BOT: &str = "555:fake-bot-token-for-the-click";
pub(super) const WAIT: Duration = Duration::from_secs(20);

fn ntfy_settings(fake: &FakeNtfy, when: ChannelWhen) -> ChannelsSettings {
    ChannelsSettings {
        ntfy: Some(NtfySettings {
            server: fake.url(),
            topic: Some("vigil-push".into()),
            reply_topic: Some("vigil-reply".into()),
        }),
        when,
        ..Default::default()
    }
}

/// The id of the next approval the runtime asks for.
pub(super) async fn approval_requested(rx: &mut Events) -> String {
    next_matching(rx, |e| match e {
        Event::ApprovalRequested { approval_id, .. } => Some(approval_id.clone()),
        _ => None,
    })
    .await
}

/// The next approval that ended, and how.
pub(super) async fn approval_resolved(rx: &mut Events) -> (String, ApprovalDecision) {
    next_matching(rx, |e| match e {
        Event::ApprovalResolved {
            approval_id, decision, ..
        } => Some((approval_id.clone(), *decision)),
        _ => None,
    })
    .await
}

/// Settings → Away's view once `f` holds for it; panics with the view after [`WAIT`].
pub(super) async fn until_view(rt: &vigil_core::Runtime, f: impl Fn(&ChannelsView) -> bool) -> ChannelsView {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let v = rt.channels().view();
        if f(&v) {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "never came to pass: {v:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Notifies "result 1" to "result 3" while `channel`'s server is down; waits until all three
/// are held and the channel retries, and returns the error Settings shows for it.
pub(super) async fn three_results_held(rt: &vigil_core::Runtime, channel: ChannelName) -> String {
    for i in 1..=3 {
        rt.notify(format!("result {i}"), "done");
    }
    let slot = match channel {
        ChannelName::Ntfy => 0,
        ChannelName::Telegram => 1,
    };
    let v = until_view(rt, |v| {
        v.channels[slot].status == ChannelStatus::Retrying && v.channels[slot].queued == 3
    })
    .await;
    v.channels[slot].last_error.clone().unwrap_or_default()
}

/// A runtime asking before commands, with ntfy set up and the user away.
async fn away_with_ntfy(dir: &std::path::Path, script: Script) -> (vigil_core::Runtime, Events, FakeLlm, FakeNtfy) {
    let fake = FakeLlm::start(script).await.unwrap();
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), None));
    rt.channels().set_settings(ntfy_settings(&ntfy, ChannelWhen::Away));
    rt.channels().set_away(Some(true));
    assert!(rt.start_background());
    (rt, rx, fake, ntfy)
}

/// Presses a push's action button as the ntfy app does: its method, URL and body, no auth.
async fn press(push: &Value, label: &str) -> reqwest::StatusCode {
    let action = push["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|b| b["label"] == label))
        .unwrap_or_else(|| panic!("no {label} button in {push}"));
    assert_eq!(action["action"], "http");
    reqwest::Client::new()
        .post(action["url"].as_str().unwrap())
        .body(action["body"].as_str().unwrap().to_string())
        .send()
        .await
        .unwrap()
        .status()
}

pub(super) fn touch(marker: &std::path::Path) -> Script {
    Script::steps(vec![
        Step::tool_call("c1", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("done"),
    ])
}

#[tokio::test]
async fn an_approval_while_away_is_pushed_with_buttons_and_allowed_from_the_phone() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/phone-allowed");
    let (rt, mut rx, _fake, ntfy) = away_with_ntfy(dir.path(), touch(&marker)).await;
    rt.submit(user("run it"));
    let id = approval_requested(&mut rx).await;
    let pushes = ntfy.wait_for("vigil-push", 1, WAIT).await;
    assert_eq!(pushes.len(), 1, "one push per approval");
    let push = &pushes[0];
    assert_eq!(push.auth.as_deref(), Some(&*format!("Bearer {NTFY_TOKEN}")));
    assert_eq!(push.body["title"], "Vigil needs your approval");
    assert!(
        push.body["message"].as_str().unwrap().contains("touch"),
        "{}",
        push.body
    );
    let labels: Vec<&str> = push.body["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Allow once", "Deny"], "never \"always\" from a phone");
    assert!(!marker.exists());
    assert!(press(&push.body, "Allow once").await.is_success());
    // The desktop card goes away as if answered there.
    let resolved = approval_resolved(&mut rx).await;
    assert_eq!(resolved, (id, ApprovalDecision::Approve));
    until_finished(&mut rx).await;
    assert!(marker.exists(), "the command ran after the phone allowed it");
    assert_eq!(rt.channels().view().refused_answers, 0);
    // The same answer again (a replay) is refused and counted.
    press(&push.body, "Allow once").await;
    until_view(&rt, |v| v.refused_answers > 0).await;
    assert_eq!(rt.channels().view().refused_answers, 1, "the replay was counted");
    rt.shutdown().await;
}

#[tokio::test]
async fn deny_forged_and_replayed_answers_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/phone-denied");
    let (rt, mut rx, fake, ntfy) = away_with_ntfy(dir.path(), touch(&marker)).await;
    rt.submit(user("run it"));
    let push = ntfy.wait_for("vigil-push", 1, WAIT).await.remove(0);
    // A forged token on the right topic, and a right-looking answer with the allow verb.
    let client = reqwest::Client::new();
    let reply = format!("{}/vigil-reply", ntfy.url());
    client
        .post(&reply)
        .body("allow 00112233445566778899aabbccddeeff")
        .send()
        .await
        .unwrap();
    until_view(&rt, |v| v.refused_answers > 0).await;
    assert_eq!(rt.channels().view().refused_answers, 1, "the forged token was counted");
    assert!(!marker.exists(), "a forged token ran the command");
    press(&push.body, "Deny").await;
    until_finished(&mut rx).await;
    // Allow with the same token after Deny: refused.
    press(&push.body, "Allow once").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the command ran after Deny");
    assert_eq!(rt.channels().view().refused_answers, 2);
    let sent = fake.requests()[1].body["messages"].to_string();
    assert!(sent.contains("The user denied the command"), "{sent}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_public_topic_gets_no_buttons_and_its_answers_count_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/public-topic");
    let fake = FakeLlm::start(touch(&marker)).await.unwrap();
    // No access token: anyone can read the topics, so anyone would hold the tokens.
    let ntfy = FakeNtfy::start(None).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    rt.channels().use_keys(Keys::fixed(None, None));
    rt.channels().set_settings(ntfy_settings(&ntfy, ChannelWhen::Always));
    assert!(rt.start_background());
    rt.submit(user("run it"));
    let id = approval_requested(&mut rx).await;
    let push = ntfy.wait_for("vigil-push", 1, WAIT).await.remove(0);
    assert!(
        push.body.get("actions").is_none(),
        "buttons on a public topic: {}",
        push.body
    );
    assert!(push.body["message"].as_str().unwrap().contains("Answer on the desktop"));
    let view = rt.channels().view();
    assert!(!view.channels[0].answers);
    rt.submit(vigil_core::protocol::Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    rt.shutdown().await;
}

#[tokio::test]
async fn pushes_queued_while_the_server_is_down_arrive_once_each_in_order_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    ntfy.set_down(true);
    {
        let (rt, _rx) = runtime(dir.path(), None);
        rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), None));
        rt.channels().set_settings(ntfy_settings(&ntfy, ChannelWhen::Always));
        assert!(rt.start_background());
        let error = three_results_held(&rt, ChannelName::Ntfy).await;
        assert!(error.contains("503"), "{error}");
        assert!(!error.contains(&ntfy.url()), "a URL in the error: {error}");
        rt.shutdown().await;
    }
    ntfy.set_down(false);
    let (rt, _rx) = runtime(dir.path(), None);
    rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), None));
    assert_eq!(
        rt.channels().view().channels[0].queued,
        3,
        "the queue survived the restart"
    );
    assert!(rt.start_background());
    let got = ntfy.wait_for("vigil-push", 3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let titles: Vec<String> = ntfy
        .published_to("vigil-push")
        .iter()
        .map(|p| p.body["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got.len(), 3);
    assert_eq!(titles, ["result 1", "result 2", "result 3"], "once each, in order");
    rt.shutdown().await;
    // The token is in no file of the data folder.
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(NTFY_TOKEN), "the token is in {}", entry.display());
    }
    assert_eq!(rt.channels().view().channels[0].channel, ChannelName::Ntfy);
}

#[tokio::test]
async fn a_push_opens_the_paired_bots_chat_when_tapped() {
    let dir = tempfile::tempdir().unwrap();
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    let tg = vigil_fake_phone::FakeTelegram::start(TG_BOT).await.unwrap();
    let (rt, _rx) = runtime(dir.path(), None);
    rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), None));
    rt.channels().set_settings(ntfy_settings(&ntfy, ChannelWhen::Always));
    assert!(rt.start_background());
    rt.notify("result 1", "done");
    let push = ntfy.wait_for("vigil-push", 1, WAIT).await.remove(0);
    assert!(
        push.body.get("click").is_none(),
        "no bot, nothing to open: {}",
        push.body
    );
    // A bot paired to a chat: tapping a push opens that chat, where the phone can answer.
    rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), Some(TG_BOT)));
    let mut settings = ntfy_settings(&ntfy, ChannelWhen::Always);
    settings.telegram = Some(vigil_core::protocol::TelegramSettings {
        api_base: tg.api_base(),
        chat_id: Some(77),
        session_id: None,
    });
    rt.channels().set_settings(settings);
    rt.notify("result 2", "done");
    let pushes = ntfy.wait_for("vigil-push", 2, WAIT).await;
    assert_eq!(
        pushes[1].body["click"], "https://t.me/vigil_test_bot",
        "{}",
        pushes[1].body
    );
    rt.shutdown().await;
}

/// Every file under `dir`.
pub fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out
}

/// The grep test: with both channel tokens in the headless runner's environment, a
/// channel failing and its errors logged at debug level, neither token shows in any
/// event, log line, file of the data folder, or a command's environment.
#[tokio::test]
async fn the_channel_tokens_reach_no_event_log_file_or_child() {
    use tokio::io::AsyncWriteExt as _;
    const TG_TOKEN: &str = "987654:telegram-secret-token-xyz";
    let fake = FakeLlm::start(
        Script::steps(vec![
            Step::tool_call("c1", "exec", json!({"command": "env", "pty": false})),
            Step::tool_call("c2", "exec", json!({"command": "env"})),
            Step::text("done"),
        ])
        .with_api_key("sk-grep"),
    )
    .await
    .unwrap();
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    // Nothing listens here: every Telegram call fails with a connection error, whose text
    // would carry the URL and so the token.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"channels": {
            "ntfy": {"server": ntfy.url(), "topic": "vigil-push", "reply_topic": "vigil-reply"},
            "telegram": {"api_base": format!("http://{closed}"), "chat_id": 5},
            "when": "always",
        }})
        .to_string(),
    )
    .unwrap();
    let data = dir.path().join("data");
    let mut cmd = tokio::process::Command::from(super::support::headless(&data, &fake, "sk-grep"));
    let mut child = cmd
        .arg("--config")
        .arg(&config)
        .env("VIGIL_APPROVAL_POLICY", "full-auto")
        .env("VIGIL_NTFY_TOKEN", NTFY_TOKEN)
        .env("VIGIL_TELEGRAM_TOKEN", TG_TOKEN)
        .env("VIGIL_LOG", "debug")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"user_message\",\"text\":\"print the environment\"}\n")
        .await
        .unwrap();
    // Time for a few failed Telegram polls and the ntfy push of the notification.
    ntfy.wait_for("vigil-push", 1, WAIT).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stdin
        .write_all(b"{\"type\":\"channels\",\"op\":{\"action\":\"get\"}}\n")
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the runner ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let views: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "channels_changed")
        .collect();
    let telegram_error = views
        .iter()
        .rev()
        .find_map(|v| v["channels"]["channels"][1]["last_error"].as_str().map(str::to_string))
        .expect("the Telegram failure shows in the view");
    assert!(!telegram_error.contains(&closed.to_string()), "{telegram_error}");
    let transcript = std::fs::read_to_string(data.join("sessions/main.jsonl")).unwrap();
    assert!(
        transcript.contains("PATH="),
        "the commands printed their environment: {transcript}"
    );
    for token in [NTFY_TOKEN, TG_TOKEN] {
        assert!(!stdout.contains(token), "a token in the events");
        assert!(!stderr.contains(token), "a token in the log");
        for file in walk(&data) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
            assert!(!text.contains(token), "a token in {}", file.display());
        }
    }
}
