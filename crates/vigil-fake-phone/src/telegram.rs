//! A fake Telegram Bot API: `POST /bot<token>/<method>` with a JSON body, answering in the
//! API's `{"ok": …, "result": …}` shape. The phone side (a user writing to the bot, pressing
//! an inline button) is driven through the handle; what the bot sent and edited is kept per
//! chat as the user would see it now.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Telegram's limit on a message's text.
pub const MAX_TEXT: usize = 4096;

/// A message the bot sent, as it reads now.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub chat_id: i64,
    pub message_id: i64,
    pub text: String,
    /// The inline keyboard's buttons as `(label, callback_data)`, row after row.
    pub buttons: Vec<(String, String)>,
    /// How many times it was edited.
    pub edits: u32,
    /// When the fake received the `sendMessage`, and each `editMessageText` that changed
    /// it: what the edit-rate bound is checked against (the fake's clock, not the test's).
    pub sent_at: Instant,
    pub edited_at: Vec<Instant>,
}

#[derive(Default)]
struct Chat {
    updates: Vec<Value>,
    sent: BTreeMap<i64, Sent>,
    /// `answerCallbackQuery`: the query's id and the text shown.
    callback_answers: Vec<(String, String)>,
    /// Every call, by method name.
    calls: Vec<String>,
}

struct Shared {
    token: String,
    state: Mutex<Chat>,
    new_update: Notify,
    next_update: AtomicI64,
    next_message: AtomicI64,
    next_query: AtomicU64,
    down: AtomicBool,
    unauthorized: AtomicU64,
}

/// A running fake Bot API; dropping it stops it.
pub struct FakeTelegram {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeTelegram {
    /// On loopback at a free port, for the bot whose token is `token`.
    pub async fn start(token: &str) -> std::io::Result<FakeTelegram> {
        Self::start_at(crate::loopback(), token).await
    }

    pub async fn start_at(addr: SocketAddr, token: &str) -> std::io::Result<FakeTelegram> {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::default(),
            new_update: Notify::new(),
            next_update: AtomicI64::new(1000),
            next_message: AtomicI64::new(1),
            next_query: AtomicU64::new(1),
            down: AtomicBool::new(false),
            unauthorized: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        let app = axum::Router::new()
            .route("/{bot}/{method}", post(call))
            .with_state(shared.clone());
        let addr = crate::serve(app, addr, stop.clone()).await?;
        Ok(FakeTelegram {
            addr,
            shared,
            _stop: stop.drop_guard(),
        })
    }

    /// The `api_base` to configure: `http://127.0.0.1:<port>`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Chat> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push_update(&self, update: Value) {
        let id = self.shared.next_update.fetch_add(1, Ordering::SeqCst);
        let mut update = update;
        update["update_id"] = json!(id);
        self.state().updates.push(update);
        self.shared.new_update.notify_waiters();
    }

    /// The user of chat `chat_id` writes `text` to the bot.
    pub fn user_sends(&self, chat_id: i64, text: &str) {
        let message_id = self.shared.next_message.fetch_add(1, Ordering::SeqCst);
        self.push_update(json!({"message": {
            "message_id": message_id,
            "date": 0,
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": chat_id, "is_bot": false, "first_name": "Phone"},
            "text": text,
        }}));
    }

    /// The user of chat `chat_id` presses the button with `data` under message
    /// `message_id`; returns the callback query's id.
    pub fn press(&self, chat_id: i64, message_id: i64, data: &str) -> String {
        let id = format!("q{}", self.shared.next_query.fetch_add(1, Ordering::SeqCst));
        let text = self
            .state()
            .sent
            .get(&message_id)
            .map(|m| m.text.clone())
            .unwrap_or_default();
        self.push_update(json!({"callback_query": {
            "id": id,
            "from": {"id": chat_id, "is_bot": false, "first_name": "Phone"},
            "message": {"message_id": message_id, "date": 0, "chat": {"id": chat_id, "type": "private"}, "text": text},
            "data": data,
        }}));
        id
    }

    /// What the bot sent to `chat_id`, oldest first, as it reads now.
    pub fn messages(&self, chat_id: i64) -> Vec<Sent> {
        self.state()
            .sent
            .values()
            .filter(|m| m.chat_id == chat_id)
            .cloned()
            .collect()
    }

    /// Waits up to `within` until `f` holds for the messages in `chat_id`.
    pub async fn wait_until(&self, chat_id: i64, within: Duration, f: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let got = self.messages(chat_id);
            if f(&got) || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The text each answered callback query showed, by query id.
    pub fn callback_answer(&self, query_id: &str) -> Option<String> {
        self.state()
            .callback_answers
            .iter()
            .find(|(id, _)| id == query_id)
            .map(|(_, t)| t.clone())
    }

    /// Waits up to `within` for the answer to a callback query.
    pub async fn wait_callback_answer(&self, query_id: &str, within: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(a) = self.callback_answer(query_id) {
                return Some(a);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Every API call so far, by method name.
    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// Calls refused for a wrong token.
    pub fn unauthorized(&self) -> u64 {
        self.shared.unauthorized.load(Ordering::SeqCst)
    }

    /// Takes the API down (502 to every call) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
        self.shared.new_update.notify_waiters();
    }
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

fn error(code: StatusCode, description: &str) -> Response {
    (
        code,
        axum::Json(json!({"ok": false, "error_code": code.as_u16(), "description": description})),
    )
        .into_response()
}

/// `reply_markup.inline_keyboard` as `(label, data)` pairs.
fn buttons(body: &Value) -> Vec<(String, String)> {
    body["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .map(|b| {
            (
                b["text"].as_str().unwrap_or("").to_string(),
                b["callback_data"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn call(State(s): State<Arc<Shared>>, Path((bot, method)): Path<(String, String)>, body: String) -> Response {
    if s.down.load(Ordering::SeqCst) {
        return error(StatusCode::BAD_GATEWAY, "Bad Gateway");
    }
    if bot != format!("bot{}", s.token) {
        s.unauthorized.fetch_add(1, Ordering::SeqCst);
        return error(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let body: Value = if body.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str(&body) {
            Ok(v) => v,
            Err(_) => return error(StatusCode::BAD_REQUEST, "Bad Request: invalid JSON"),
        }
    };
    s.state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .calls
        .push(method.clone());
    match method.as_str() {
        "getMe" => ok(json!({"id": 1, "is_bot": true, "first_name": "Vigil", "username": "vigil_test_bot"})),
        "getUpdates" => get_updates(&s, &body).await,
        "sendMessage" => {
            let text = body["text"].as_str().unwrap_or("").to_string();
            if text.chars().count() > MAX_TEXT {
                return error(StatusCode::BAD_REQUEST, "Bad Request: message is too long");
            }
            let Some(chat_id) = body["chat_id"].as_i64() else {
                return error(StatusCode::BAD_REQUEST, "Bad Request: chat not found");
            };
            let message_id = s.next_message.fetch_add(1, Ordering::SeqCst);
            let sent = Sent {
                chat_id,
                message_id,
                text: text.clone(),
                buttons: buttons(&body),
                edits: 0,
                sent_at: Instant::now(),
                edited_at: Vec::new(),
            };
            s.state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .sent
                .insert(message_id, sent);
            ok(json!({"message_id": message_id, "date": 0, "chat": {"id": chat_id, "type": "private"}, "text": text}))
        }
        "editMessageText" => {
            let text = body["text"].as_str().unwrap_or("").to_string();
            if text.chars().count() > MAX_TEXT {
                return error(StatusCode::BAD_REQUEST, "Bad Request: MESSAGE_TOO_LONG");
            }
            let id = body["message_id"].as_i64().unwrap_or(0);
            let mut state = s.state.lock().unwrap_or_else(|e| e.into_inner());
            let Some(m) = state.sent.get_mut(&id) else {
                return error(StatusCode::BAD_REQUEST, "Bad Request: message to edit not found");
            };
            let new_buttons = buttons(&body);
            if m.text == text && m.buttons == new_buttons {
                return error(StatusCode::BAD_REQUEST, "Bad Request: message is not modified");
            }
            m.text = text.clone();
            m.buttons = new_buttons;
            m.edits += 1;
            m.edited_at.push(Instant::now());
            ok(json!({"message_id": id, "date": 0, "chat": {"id": m.chat_id, "type": "private"}, "text": text}))
        }
        "answerCallbackQuery" => {
            let id = body["callback_query_id"].as_str().unwrap_or("").to_string();
            let text = body["text"].as_str().unwrap_or("").to_string();
            s.state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .callback_answers
                .push((id, text));
            ok(json!(true))
        }
        _ => error(StatusCode::NOT_FOUND, "Not Found: method not found"),
    }
}

/// Updates from `offset` on; with none, waits up to `timeout` seconds for one (the long poll).
async fn get_updates(s: &Shared, body: &Value) -> Response {
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(50));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = s.new_update.notified();
        {
            let mut state = s.state.lock().unwrap_or_else(|e| e.into_inner());
            // As Telegram does: an offset confirms every update before it.
            state.updates.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            if !state.updates.is_empty() {
                return ok(json!(state.updates.clone()));
            }
        }
        if s.down.load(Ordering::SeqCst) {
            return error(StatusCode::BAD_GATEWAY, "Bad Gateway");
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return ok(json!([]));
        }
    }
}
