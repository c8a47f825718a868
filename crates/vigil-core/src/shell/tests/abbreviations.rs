//! Long options abbreviated: GNU getopt (and git's parse-options) take any unambiguous
//! prefix, so `sort --outp=x` is `sort --output=x`. Each line abbreviates an option that
//! writes, runs a program or reads a file the wall cannot see.

use super::*;

const ABBREVIATED: &[&str] = &[
    "sort --outp=notes.txt notes.txt",
    "sort --ou notes.txt notes.txt",
    "sort --o=notes.txt notes.txt",
    "sort -u --outpu=notes.txt notes.txt",
    "sort --compress-prog=sh -S 1 notes.txt",
    "sort --comp=sh notes.txt",
    "sort --temp=sub notes.txt",
    "sort --random-sou=secret notes.txt",
    "sort --files0=list",
    "wc --files0-f=list",
    "du --files0=list",
    "du --exclude-f=secret .",
    "date --se=2001-01-01",
    "date --fi=secret",
    "file --comp -m notes.txt",
    "file --files=list",
    "grep --exclude-f=secret -r todo .",
    "diff --from=secret notes.txt",
    "git blame --cont=secret notes.txt",
];

/// Full names and abbreviations of harmless options still pass.
const HARMLESS: &[&str] = &[
    "sort --unique --reverse notes.txt",
    "sort --uniq notes.txt",
    "wc --lines notes.txt",
    "grep --ignore-case --line-number todo notes.txt",
    "du --summarize sub",
];

#[tokio::test]
async fn abbreviated_options_are_refused_as_their_full_names_are() {
    assert!(
        ABBREVIATED.len() >= 19,
        "the corpus keeps its size: {}",
        ABBREVIATED.len()
    );
    assert_refused(ABBREVIATED).await;
}

#[tokio::test]
async fn harmless_long_options_still_pass() {
    assert_read_only(HARMLESS).await;
}
