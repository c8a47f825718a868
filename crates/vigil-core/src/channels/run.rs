//! The channels' loops, one task each, all ended by the channels' stop token: the router
//! (events → outboxes, approvals' ends, reply streams), a sender per channel (in order,
//! retried with backoff), the ntfy answer stream, the Telegram long poll, and the chat
//! flusher (one edit per interval at most).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use vigil_protocol::{ApprovalDecision, ChannelName, ChannelStatus, Event};

use super::push::{self, Push};
use super::telegram::{self, Update};
use super::tokens::{PairRefusal, Refusal};
use super::{chat, slot, Inner};
use crate::session::PRIMARY_SESSION;

/// First wait after a failed delivery or connection; doubled up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_secs(1);
pub const RETRY_MAX: Duration = Duration::from_secs(60);

pub(super) fn spawn_all(inner: Arc<Inner>, rx: mpsc::UnboundedReceiver<super::Happened>) {
    let stop = inner.stop.clone();
    let spawn = |f: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>| {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = f => {}
            }
        });
    };
    spawn(Box::pin(route(inner.clone(), rx)));
    spawn(Box::pin(send(inner.clone(), ChannelName::Ntfy)));
    spawn(Box::pin(send(inner.clone(), ChannelName::Telegram)));
    spawn(Box::pin(ntfy_answers(inner.clone())));
    spawn(Box::pin(telegram_poll(inner.clone())));
    spawn(Box::pin(flush_chats(inner)));
}

fn next_backoff(d: Duration) -> Duration {
    (d * 2).min(RETRY_MAX)
}

/// Waits `d`, or less if the settings change.
async fn pause(inner: &Inner, d: Duration) {
    let mut changed = inner.generation.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = changed.changed() => {}
    }
}

async fn route(inner: Arc<Inner>, mut rx: mpsc::UnboundedReceiver<super::Happened>) {
    while let Some((e, away)) = rx.recv().await {
        let session = e.session_id.clone().unwrap_or_else(|| PRIMARY_SESSION.to_string());
        match &e.event {
            Event::ApprovalResolved {
                approval_id,
                decision,
                expired,
            } => resolved(&inner, approval_id, *decision, *expired),
            // A turn takes the phone's message when it starts with it, or when the message,
            // sent while the turn ran, is handed to the model: what it writes from then on
            // is the phone's reply.
            Event::TurnStarted { .. } | Event::QueueConsumed { .. } => {
                let mut state = inner.state();
                if let Some(chat) = state.phone_sent.remove(&session) {
                    state.phone_turns.insert(session.clone(), chat);
                    let continues = matches!(e.event, Event::QueueConsumed { .. })
                        && state
                            .streams
                            .get(&session)
                            .is_some_and(|s| s.chat_id == chat && !s.finished);
                    if !continues {
                        // A reply still being flushed keeps going under a key of its own.
                        if let Some(mut old) = state.streams.remove(&session) {
                            old.finished = true;
                            state.stream_seq += 1;
                            let key = format!("{session}\0{}", state.stream_seq);
                            state.streams.insert(key, old);
                        }
                        state.streams.insert(session, chat::Stream::new(chat));
                    }
                }
            }
            Event::TextDelta { text } => {
                // A finished reply takes nothing more (a desktop turn after a phone's).
                if let Some(s) = inner.state().streams.get_mut(&session).filter(|s| !s.finished) {
                    s.text.push_str(text);
                }
            }
            Event::TurnFinished { .. } => {
                let mut state = inner.state();
                if let Some(s) = state.streams.get_mut(&session) {
                    s.finished = true;
                }
                state.phone_turns.remove(&session);
            }
            _ => {
                if let Some(p) = push::from_event(&e) {
                    queue(&inner, p, &session, away);
                }
            }
        }
    }
}

/// Queues a push on each channel that takes it now.
fn queue(inner: &Inner, mut p: Push, session: &str, away: Option<bool>) {
    let now = inner.clock.now_ms();
    let (to_ntfy, to_telegram) = {
        let mut state = inner.state();
        let wanted = push::wanted(&state.settings, p.kind, away);
        // A turn the phone started asks that phone, wherever the user is.
        let phone_turn =
            p.ask.is_some() && (state.phone_turns.contains_key(session) || state.phone_sent.contains_key(session));
        let to_ntfy = wanted && state.settings.ntfy.is_some();
        let to_telegram =
            state.settings.telegram.is_some() && Inner::paired_chat(&state).is_some() && (wanted || phone_turn);
        if let Some(ask) = p.ask.as_mut() {
            if to_ntfy || to_telegram {
                ask.token = state.tokens.issue(&ask.approval_id, ask.expires_at);
            }
        }
        (to_ntfy, to_telegram)
    };
    for (yes, c) in [(to_ntfy, ChannelName::Ntfy), (to_telegram, ChannelName::Telegram)] {
        if yes {
            inner.boxes[slot(c)]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(p.clone(), now);
            inner.wake[slot(c)].notify_one();
        }
    }
    if to_ntfy || to_telegram {
        inner.emit_view();
    }
}

/// An approval ended (answered on the desktop or a phone, or expired): its token answers
/// nothing any more, an unsent push of it is dropped, and its Telegram message loses its
/// buttons and says how it ended.
fn resolved(inner: &Arc<Inner>, approval_id: &str, decision: ApprovalDecision, expired: bool) {
    let asked = {
        let mut state = inner.state();
        state.tokens.revoke(approval_id);
        state.asked.remove(approval_id)
    };
    for b in &inner.boxes {
        b.lock().unwrap_or_else(|e| e.into_inner()).drop_approval(approval_id);
    }
    let Some((chat, message_id, text)) = asked else {
        return;
    };
    let outcome = match (decision, expired) {
        (_, true) => "Expired: nobody answered in time.",
        (ApprovalDecision::Deny, _) => "Denied.",
        _ => "Allowed.",
    };
    let Some(tg) = inner.telegram() else {
        return;
    };
    tokio::spawn(async move {
        if let Err(e) = tg.edit(chat, message_id, &format!("{text}\n\n{outcome}")).await {
            tracing::debug!(
                "could not update the approval's Telegram message: {}",
                super::keys::redact(&e, std::slice::from_ref(&tg.token))
            );
        }
    });
}

/// Delivers one channel's outbox in order, retrying with backoff.
async fn send(inner: Arc<Inner>, channel: ChannelName) {
    let mut backoff = RETRY_FIRST;
    loop {
        let now = inner.clock.now_ms();
        let next = inner.boxes[slot(channel)]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next(now);
        let p = match next {
            Ok(p) => p,
            Err(due) => {
                let wait = due.map_or(Duration::from_secs(3600), |at| {
                    Duration::from_millis((at - now).clamp(10, 1000) as u64)
                });
                let _ = tokio::time::timeout(wait, inner.wake[slot(channel)].notified()).await;
                continue;
            }
        };
        // An approval that ended while queued is not pushed.
        if let Some(ask) = &p.ask {
            let dead = !inner.state().tokens.is_live(&ask.approval_id) || ask.expires_at.is_some_and(|at| at <= now);
            if dead {
                inner.boxes[slot(channel)]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .done(p.seq);
                continue;
            }
        }
        let result = match channel {
            ChannelName::Ntfy => deliver_ntfy(&inner, &p).await,
            ChannelName::Telegram => deliver_telegram(&inner, &p).await,
        };
        match result {
            Ok(()) => {
                backoff = RETRY_FIRST;
                inner.boxes[slot(channel)]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .done(p.seq);
                inner.state().links[slot(channel)].sent += 1;
                inner.link(channel, ChannelStatus::Connected, None);
            }
            Err(e) => {
                inner.link(channel, ChannelStatus::Retrying, Some(e));
                tokio::select! {
                    _ = pause(&inner, backoff) => backoff = next_backoff(backoff),
                    _ = inner.back[slot(channel)].notified() => backoff = RETRY_FIRST,
                }
            }
        }
    }
}

async fn deliver_ntfy(inner: &Inner, p: &Push) -> Result<(), String> {
    let n = inner.ntfy().ok_or("ntfy is not set up")?;
    let buttons = inner.ntfy_private(&n).await;
    // The chat with the paired bot is where a phone can answer and ask; Vigil has no page
    // of its own to open.
    let click = bot_link(inner).await;
    n.publish(p, buttons, click.as_deref()).await
}

/// `https://t.me/<bot>` while a bot is paired, its name asked once per settings change.
async fn bot_link(inner: &Inner) -> Option<String> {
    let tg = inner.telegram()?;
    Inner::paired_chat(&inner.state())?;
    if !std::mem::replace(&mut inner.state().bot_link_asked, true) {
        match tg.link().await {
            Ok(link) => inner.state().bot_link = link,
            // Pushes go without a click until the settings change.
            Err(e) => tracing::debug!(
                "could not read the bot's name: {}",
                super::keys::redact(&e, std::slice::from_ref(&tg.token))
            ),
        }
    }
    inner.state().bot_link.clone()
}

async fn deliver_telegram(inner: &Inner, p: &Push) -> Result<(), String> {
    let tg = inner.telegram().ok_or("no Telegram bot token is stored")?;
    let chat = Inner::paired_chat(&inner.state()).ok_or("no Telegram chat is paired")?;
    let text = push::cut(&format!("{}\n{}", p.title, p.text()), telegram::MAX_TEXT - 100);
    let buttons = p.ask.as_ref().map(|a| telegram::approval_buttons(&a.token));
    let message_id = tg.send(chat, &text, buttons).await?;
    if let Some(ask) = &p.ask {
        let live = {
            let mut state = inner.state();
            state
                .asked
                .insert(ask.approval_id.clone(), (chat, message_id, text.clone()));
            state.tokens.is_live(&ask.approval_id)
        };
        // Answered on the desktop while this was on its way.
        if !live {
            inner.state().asked.remove(&ask.approval_id);
            let _ = tg.edit(chat, message_id, &format!("{text}\n\nAlready answered.")).await;
        }
    }
    Ok(())
}

/// Redeems a phone's token and answers the approval; the reason when it is refused.
fn redeem(inner: &Inner, token: &str, allow: bool) -> Result<(), Refusal> {
    let now = inner.clock.now_ms();
    let redeemed = inner.state().tokens.redeem(token, now);
    let approval_id = match redeemed {
        Ok(id) => id,
        Err(why) => {
            inner.state().refused += 1;
            inner.emit_view();
            return Err(why);
        }
    };
    let decision = match allow {
        true => ApprovalDecision::Approve,
        false => ApprovalDecision::Deny,
    };
    match inner.host().is_some_and(|h| h.answer(&approval_id, decision)) {
        true => Ok(()),
        false => Err(Refusal::AlreadyAnswered),
    }
}

/// Reads answers from the ntfy reply topic, reconnecting with backoff.
async fn ntfy_answers(inner: Arc<Inner>) {
    let mut backoff = RETRY_FIRST;
    let mut since = None;
    let mut changes = inner.generation.subscribe();
    loop {
        changes.mark_unchanged();
        let Some(n) = inner.ntfy() else {
            let _ = changes.changed().await;
            continue;
        };
        inner.ntfy_private(&n).await;
        let listen = n.listen(
            &mut since,
            || {
                inner.link(ChannelName::Ntfy, ChannelStatus::Connected, None);
                if backoff > RETRY_FIRST {
                    inner.back[slot(ChannelName::Ntfy)].notify_one();
                }
            },
            |a| {
                if inner.state().ntfy_answers != Some(true) {
                    // Anyone can read these topics: an answer on them proves nothing.
                    inner.state().refused += 1;
                    return;
                }
                if let Err(why) = redeem(&inner, &a.token, a.allow) {
                    tracing::info!("an ntfy answer was refused: {why:?}");
                }
            },
        );
        let result = tokio::select! {
            r = listen => r,
            _ = changes.changed() => continue,
        };
        if let Err(e) = result {
            inner.link(ChannelName::Ntfy, ChannelStatus::Retrying, Some(e));
            pause(&inner, backoff).await;
            backoff = next_backoff(backoff);
        } else {
            backoff = RETRY_FIRST;
        }
    }
}

/// The Telegram long poll.
async fn telegram_poll(inner: Arc<Inner>) {
    let mut backoff = RETRY_FIRST;
    let mut changes = inner.generation.subscribe();
    loop {
        changes.mark_unchanged();
        let Some(tg) = inner.telegram() else {
            let _ = changes.changed().await;
            continue;
        };
        let offset = inner.state().stored.offset;
        let polled = tokio::select! {
            r = tg.updates(offset) => r,
            _ = changes.changed() => continue,
        };
        match polled {
            Ok((updates, next)) => {
                if backoff > RETRY_FIRST {
                    inner.back[slot(ChannelName::Telegram)].notify_one();
                }
                backoff = RETRY_FIRST;
                inner.link(ChannelName::Telegram, ChannelStatus::Connected, None);
                if next != offset {
                    inner.state().stored.offset = next;
                    inner.save();
                }
                for u in updates {
                    on_update(&inner, &tg, u).await;
                }
            }
            Err(e) => {
                inner.link(ChannelName::Telegram, ChannelStatus::Retrying, Some(e));
                pause(&inner, backoff).await;
                backoff = next_backoff(backoff);
            }
        }
    }
}

async fn on_update(inner: &Inner, tg: &telegram::Telegram, u: Update) {
    let now = inner.clock.now_ms();
    match u {
        Update::Other => {}
        Update::Text { chat_id, text } => {
            enum Do {
                Chat(String),
                Paired,
                Nothing,
            }
            let what = {
                let mut state = inner.state();
                let paired = Inner::paired_chat(&state);
                if paired == Some(chat_id) && !text.trim_start().starts_with('/') {
                    let session = state
                        .settings
                        .telegram
                        .as_ref()
                        .and_then(|t| t.session_id.clone())
                        .unwrap_or_else(|| PRIMARY_SESSION.to_string());
                    state.phone_sent.insert(session.clone(), chat_id);
                    Do::Chat(session)
                } else if let Some(p) = state.pairing.as_mut() {
                    match p.attempt(&text, now) {
                        Ok(()) => {
                            state.pairing = None;
                            state.stored.paired_chat = Some(chat_id);
                            Do::Paired
                        }
                        Err(PairRefusal::Wrong { left }) => {
                            state.refused += 1;
                            if left == 0 {
                                state.pairing = None;
                            }
                            Do::Nothing
                        }
                        Err(PairRefusal::NoCode) => {
                            state.pairing = None;
                            state.ignored += 1;
                            Do::Nothing
                        }
                    }
                } else if paired != Some(chat_id) {
                    state.ignored += 1;
                    Do::Nothing
                } else {
                    Do::Nothing
                }
            };
            match what {
                Do::Chat(session) => {
                    if let Some(h) = inner.host() {
                        h.user_message(&session, text);
                    }
                }
                Do::Paired => {
                    inner.save();
                    inner.changed();
                    let _ = tg
                        .send(chat_id, "Paired with Vigil. Messages you send here go to your main conversation; approvals come with Allow once / Deny.", None)
                        .await;
                }
                Do::Nothing => {}
            }
            inner.emit_view();
        }
        Update::Button {
            query_id,
            chat_id,
            from,
            data,
            ..
        } => {
            let paired = Inner::paired_chat(&inner.state());
            let reply = if paired != Some(chat_id) || from != chat_id {
                inner.state().ignored += 1;
                inner.emit_view();
                "This chat is not paired with Vigil."
            } else {
                match telegram::parse_button(&data) {
                    None => "Vigil does not know this button.",
                    Some((allow, token)) => match redeem(inner, token, allow) {
                        Ok(()) if allow => "Allowed once.",
                        Ok(()) => "Denied.",
                        Err(Refusal::AlreadyAnswered) => "Already answered.",
                        Err(Refusal::Expired) => "This approval expired.",
                        Err(Refusal::Unknown) => "Vigil does not know this approval.",
                    },
                }
            };
            let _ = tg.answer_button(&query_id, reply).await;
        }
    }
}

/// Brings each streamed reply's messages up to date, at most once per edit interval.
async fn flush_chats(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.edit_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let streams: Vec<(String, chat::Stream)> = inner
            .state()
            .streams
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if streams.is_empty() {
            continue;
        }
        let Some(tg) = inner.telegram() else {
            continue;
        };
        for (session, stream) in streams {
            let mut shown = stream.shown.clone();
            let mut failed = None;
            for step in stream.steps() {
                let done = match step {
                    chat::Step::Send { index, text } => tg.send(stream.chat_id, &text, None).await.map(|id| {
                        shown.truncate(index);
                        shown.push((id, text));
                    }),
                    chat::Step::Edit { message_id, text } => {
                        tg.edit(stream.chat_id, message_id, &text).await.map(|()| {
                            if let Some(s) = shown.iter_mut().find(|(id, _)| *id == message_id) {
                                s.1 = text;
                            }
                        })
                    }
                };
                if let Err(e) = done {
                    failed = Some(e);
                    break;
                }
            }
            let mut state = inner.state();
            let finished = match state.streams.get_mut(&session) {
                Some(s) => {
                    s.shown = shown;
                    s.finished && failed.is_none() && s.steps().is_empty()
                }
                None => false,
            };
            if finished {
                state.streams.remove(&session);
            }
            drop(state);
            if let Some(e) = failed {
                inner.link(ChannelName::Telegram, ChannelStatus::Retrying, Some(e));
            }
        }
    }
}
