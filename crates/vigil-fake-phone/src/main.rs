//! `vigil-fake-phone [--ntfy-token T] [--telegram-token T]`: a fake ntfy server and a fake
//! Telegram Bot API on loopback for the end-to-end tests. Prints one JSON line with both
//! addresses, then reads control lines on stdin:
//! `{"send": {"chat_id": 7, "text": "…"}}`, `{"press": {"chat_id": 7, "message_id": 3, "data": "…"}}`,
//! `{"messages": 7}` (answers with the chat as JSON), `{"published": "topic"}`.

use std::io::Write as _;

use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt as _;
use vigil_fake_phone::{FakeNtfy, FakeTelegram};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut ntfy_token, mut telegram_token) = (None, "123:fake".to_string());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ntfy-token" => ntfy_token = args.next(),
            "--telegram-token" => telegram_token = args.next().unwrap_or_default(),
            other => {
                eprintln!("unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    let ntfy = FakeNtfy::start(ntfy_token.as_deref()).await?;
    let telegram = FakeTelegram::start(&telegram_token).await?;
    let say = |v: Value| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    };
    say(json!({"ntfy": ntfy.url(), "telegram": telegram.api_base()}));
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            say(json!({"error": "not JSON"}));
            continue;
        };
        if let Some(m) = v.get("send") {
            telegram.user_sends(m["chat_id"].as_i64().unwrap_or(0), m["text"].as_str().unwrap_or(""));
            say(json!({"ok": true}));
        } else if let Some(p) = v.get("press") {
            let id = telegram.press(
                p["chat_id"].as_i64().unwrap_or(0),
                p["message_id"].as_i64().unwrap_or(0),
                p["data"].as_str().unwrap_or(""),
            );
            let answer = telegram
                .wait_callback_answer(&id, std::time::Duration::from_secs(10))
                .await;
            say(json!({"answer": answer}));
        } else if let Some(chat) = v.get("messages").and_then(Value::as_i64) {
            let sent: Vec<Value> = telegram
                .messages(chat)
                .into_iter()
                .map(|m| json!({"message_id": m.message_id, "text": m.text, "buttons": m.buttons}))
                .collect();
            say(json!({"messages": sent}));
        } else if let Some(topic) = v.get("published").and_then(Value::as_str) {
            let got: Vec<Value> = ntfy.published_to(topic).into_iter().map(|p| p.body).collect();
            say(json!({"published": got}));
        } else {
            say(json!({"error": "unknown command"}));
        }
    }
    Ok(())
}
