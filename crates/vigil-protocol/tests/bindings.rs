//! The TypeScript the UI imports must match the Rust types exactly.
//! Regenerate with `UPDATE_BINDINGS=1 cargo test -p vigil-protocol`.

use std::path::PathBuf;

#[test]
fn typescript_bindings_are_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/lib/protocol.ts");
    let generated = vigil_protocol::typescript_bindings();
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        // Regenerating skips the drift check, which CI exists to run.
        assert!(
            std::env::var_os("CI").is_none(),
            "UPDATE_BINDINGS is set in CI, where the bindings must be checked, not rewritten"
        );
        std::fs::write(&path, &generated).expect("write bindings");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "ui/src/lib/protocol.ts is out of date with crates/vigil-protocol; run `UPDATE_BINDINGS=1 cargo test -p vigil-protocol` and commit the result"
    );
}
