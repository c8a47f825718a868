//! # run
//!
//! One way to start a run and one way to deliver its result, for every kind of work: the
//! user's turns, continuations, heartbeat runs, reflection and routine jobs.
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

pub use budget::Budget;
pub use deliver::{deliver, is_silent, summarize, Delivery, Target};
