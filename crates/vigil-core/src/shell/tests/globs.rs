//! Words the shell (dash, `sh -c`) expands before the program sees them: `.*` is `.` and
//! `..`, `*` is every name here, links out and names that read as options included; and
//! `..` after a link, which the kernel resolves from the link's target.

use super::*;

const GLOBS: &[&str] = &[
    "cat .*/approvals.json",
    "cat .?/approvals.json",
    "ls .*",
    "du -s .*",
    "grep -r s3cret .*",
    "cat */approvals.json",
    "cat u?/approvals.json",
    "cat [u]p/approvals.json",
    "cat s*t",
    "head -c 100 secre*",
    // `*from=list` is `--files0-from=list`: an option where a file was meant.
    "wc *from=list",
    "sort *from=list",
    "du *from=list",
    // `out` is a link out; `out/..` is the folder above its target.
    "cat out/../approvals.json",
    "ls out/..",
];

const HARMLESS: &[&str] = &[
    "cat sub/*",
    "ls *.txt",
    "cat sub/*.txt",
    "wc -l sub/?.txt",
    "cat sub/../notes.txt",
    "grep -c todo *.txt",
    "ls sub/[ab].txt",
    "grep -n '.*' notes.txt",
    "find . -name '*.txt'",
];

#[tokio::test]
async fn globs_and_dot_dots_that_leave_the_workspace_are_refused() {
    assert!(GLOBS.len() >= 15, "the corpus keeps its size: {}", GLOBS.len());
    assert_refused(GLOBS).await;
}

#[tokio::test]
async fn globs_that_stay_inside_still_pass() {
    assert_read_only(HARMLESS).await;
}
