//! Integration tests of the runtime against the real fake provider over real HTTP.

mod suite;
