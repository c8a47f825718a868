//! One integration-test binary for the crate (see STYLE.md habit 10); the cases live in
//! `suite/`, grouped by concern.

mod suite;
