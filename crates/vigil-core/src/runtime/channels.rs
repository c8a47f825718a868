//! The runtime as the channels' host: answers go through the same gate the desktop card
//! uses, messages are user turns like typed text, presence is the desktop session's.
//!
//! Must never: answer an approval any other way than the gate's own `answer`, or start a
//! turn other than through `Op::UserMessage` (so a phone's message queues and steers as a
//! typed one does).

use vigil_protocol::{ApprovalDecision, Op};

use super::Runtime;
use crate::channels::ChannelHost;
use crate::presence::{Presence, PresenceSource};

impl ChannelHost for Runtime {
    fn answer(&self, approval_id: &str, decision: ApprovalDecision) -> bool {
        self.approvals().answer(approval_id, decision)
    }

    fn user_message(&self, session_id: &str, text: String) {
        self.submit(Op::UserMessage {
            text,
            session_id: Some(session_id.to_string()),
            attachments: vec![],
        });
    }

    fn away(&self) -> Option<bool> {
        match self.presence_source() {
            PresenceSource::Starting => None,
            _ => Some(matches!(self.presence(), Presence::Away { .. })),
        }
    }
}
