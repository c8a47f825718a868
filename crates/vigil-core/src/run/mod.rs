//! # run
//!
//! One way to start a run and one way to deliver its result, for every kind of work: the
//! user's turns, continuations, heartbeat runs, reflection and routine jobs.
//!
//! The life of a run: whoever starts work (the user's message, an exit notice, the heartbeat's
//! wake, a routine falling due) describes it as a [`RunRequest`] — which session, what input,
//! who is watching, what kind of work, its extras and deadline — and hands it to
//! [`start::run`] (the heartbeat and the scheduler through the [`Runner`] seam). There the
//! lane is taken, a conversation takes in its mailbox and notices, the gate and the sandbox
//! are chosen for who is watching, the turn runs, and the finish acknowledges or gives back
//! what was taken in, kills what a run past its deadline left, frees the lane and charges
//! background tokens to the [`Budget`]. The result's reply is then the caller's to deliver
//! through [`deliver`] — or not, when it says there is nothing to tell.
//!
//! [`lane`]: one run at a time per session.
//!
//! [`budget`]: the daily account every background run is charged to.
//!
//! [`deliver`]: a result goes to the main conversation's mailbox, then its card and
//! notification (or, for a conversation's own continuation, a notification that opens it).
//!
//! Must never: know the kinds of work above it (heartbeat, routines, runtime): they describe
//! a run and hand it here.

pub mod budget;
pub mod deliver;
pub mod lane;
pub mod request;
pub mod start;

pub use budget::Budget;
pub use deliver::{deliver, is_silent, summarize, Delivery, Target};
pub use lane::{Lane, Lanes};
pub use request::{last_reply, Attendance, RunKind, RunRequest, RunResult, Runner};
