//! What goes to a phone: a [`Push`] made from an event on its way out ([`from_event`]), and
//! whether its kind goes now ([`wanted`]). A push carries the event's own title and a short
//! body (a command line, a reply's first line), never a file's content, a key or a token
//! of the user's.

use serde::{Deserialize, Serialize};
use vigil_protocol::{ChannelWhen, ChannelsSettings, Event, EventEnvelope, NotificationKind};

/// A push body is cut to this many characters.
pub const BODY_CHARS: usize = 400;

/// The kinds of event the user chooses a "when" for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Approval,
    Continuation,
    Routine,
    Monitor,
    Failure,
    Budget,
}

/// An approval a push asks about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    pub approval_id: String,
    /// The one-time token its buttons carry (never saved: see `outbox`).
    #[serde(skip)]
    pub token: String,
    pub expires_at: Option<i64>,
}

/// One push, queued or sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Push {
    /// Order of arrival in its outbox.
    pub seq: u64,
    pub kind: Kind,
    /// The conversation it is about, for coalescing and the click.
    pub conversation: Option<String>,
    pub title: String,
    pub body: String,
    /// Events folded or coalesced into this one besides itself.
    pub more: u32,
    /// Not before this (ms): a coalesced push waits out its minute.
    pub due_at: i64,
    pub ask: Option<Ask>,
    /// A fold of older pushes past the outbox's bound; its title says how many.
    #[serde(default)]
    pub folded: bool,
}

impl Push {
    /// The text a phone shows under the title.
    pub fn text(&self) -> String {
        match self.more {
            _ if self.folded => self.body.clone(),
            0 => self.body.clone(),
            n => format!("{}\n(+{n} more)", self.body),
        }
    }
}

/// `when` for `kind` under `settings`, and whether that means "send now" given the user's
/// presence (`away: None`: it cannot be read, so "when away" means always).
pub fn wanted(settings: &ChannelsSettings, kind: Kind, away: Option<bool>) -> bool {
    let k = &settings.kinds;
    let when = match kind {
        Kind::Approval => k.approval,
        Kind::Continuation => k.continuation,
        Kind::Routine => k.routine,
        Kind::Monitor => k.monitor,
        Kind::Failure => k.failure,
        Kind::Budget => k.budget,
    }
    .unwrap_or(settings.when);
    match when {
        ChannelWhen::Never => false,
        ChannelWhen::Always => true,
        ChannelWhen::Away => away.unwrap_or(true),
    }
}

pub fn cut(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The push an event makes (without its token), if it makes one.
pub fn from_event(e: &EventEnvelope) -> Option<Push> {
    let conversation = e.session_id.clone();
    let (kind, title, body, ask) = match &e.event {
        Event::ApprovalRequested {
            approval_id,
            command,
            expires_at,
            ..
        } => (
            Kind::Approval,
            "Vigil needs your approval".to_string(),
            format!("Run `{}`?", cut(command, BODY_CHARS)),
            Some(Ask {
                approval_id: approval_id.clone(),
                token: String::new(),
                expires_at: *expires_at,
            }),
        ),
        // The approval's own event above carries its buttons.
        Event::Notification {
            approval_id: Some(_), ..
        } => return None,
        Event::Notification { kind, title, body, .. } => {
            let kind = match kind {
                NotificationKind::Process => Kind::Continuation,
                NotificationKind::Routine => Kind::Routine,
                NotificationKind::Monitor | NotificationKind::Heartbeat => Kind::Monitor,
                NotificationKind::Budget => Kind::Budget,
                NotificationKind::Approval | NotificationKind::Other => Kind::Failure,
            };
            (kind, title.clone(), cut(body, BODY_CHARS), None)
        }
        _ => return None,
    };
    Some(Push {
        seq: 0,
        kind,
        conversation,
        title,
        body,
        more: 0,
        due_at: e.ts,
        ask,
        folded: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::ChannelKinds;

    #[test]
    fn a_kind_overrides_the_default_and_unknown_presence_means_always() {
        let settings = ChannelsSettings {
            when: ChannelWhen::Away,
            kinds: ChannelKinds {
                routine: Some(ChannelWhen::Never),
                budget: Some(ChannelWhen::Always),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(!wanted(&settings, Kind::Approval, Some(false)), "here: desktop only");
        assert!(wanted(&settings, Kind::Approval, Some(true)), "away: the phone too");
        assert!(wanted(&settings, Kind::Approval, None), "presence unknown: always");
        assert!(!wanted(&settings, Kind::Routine, Some(true)));
        assert!(wanted(&settings, Kind::Budget, Some(false)));
    }

    #[test]
    fn each_notification_is_pushed_as_its_kind() {
        let kind_of = |kind| {
            let e = EventEnvelope {
                id: "e".into(),
                ts: 0,
                session_id: None,
                scope: vigil_protocol::Scope::Primary,
                source: vigil_protocol::Source::Heartbeat,
                run_id: None,
                event: Event::notice(kind, "t", "b"),
            };
            from_event(&e).unwrap().kind
        };
        assert_eq!(kind_of(NotificationKind::Budget), Kind::Budget, "the budget spent");
        assert_eq!(kind_of(NotificationKind::Heartbeat), Kind::Monitor);
        assert_eq!(kind_of(NotificationKind::Routine), Kind::Routine);
        assert_eq!(
            kind_of(NotificationKind::Monitor),
            Kind::Monitor,
            "a trigger-fired routine"
        );
        assert_eq!(kind_of(NotificationKind::Process), Kind::Continuation);
        assert_eq!(kind_of(NotificationKind::Other), Kind::Failure);
    }
}
