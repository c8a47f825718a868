//! Errors on the wire: the class of a failure an `error` event carries, and the one shape every
//! desktop command returns.
//!
//! Owns: [`ErrorKind`] (each class says what the user does next) and [`CommandError`].
//! Must never: carry a secret or a raw provider body in a message meant for the user.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Classes of failure; each tells the user what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The API key was rejected: fix it in Settings.
    Auth,
    /// The server does not know the model: pick another.
    ModelNotFound,
    /// The request was refused as malformed.
    BadRequest,
    /// Still rate limited after the retries.
    RateLimited,
    /// The provider is overloaded or failing (5xx/529) after the retries.
    Server,
    /// The base URL could not be reached.
    Network,
    /// Connect or idle timeout.
    Timeout,
    /// The stream broke or carried something unreadable.
    Stream,
    /// Settings are missing or invalid.
    Config,
    /// A file could not be read or written.
    Storage,
    /// An op could not be understood.
    InvalidOp,
    /// An image sent with a message could not be used (unreadable, too big, not an image);
    /// nothing was sent: pick another file or send without it.
    Attachment,
    /// A conversation could not be found, created, renamed or deleted.
    Session,
    /// The desktop could not do something for Vigil (show a notification); Vigil goes on
    /// without it.
    Desktop,
    /// A bug in Vigil stopped a turn; what was saved is kept and the conversation goes on.
    Internal,
}

/// The one error shape every desktop command returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandError {
    /// Stable, machine-readable: `invalid_settings`, `storage`, `secrets`, `not_ready`.
    pub code: String,
    /// For the user.
    pub message: String,
    /// The form field the error is about (`schedule`, `timezone`, `title`…), so a form can
    /// show it at that field; absent for errors about the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub field: Option<String>,
}
