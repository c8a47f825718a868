//! Files read through an option's value or a list in a file, never named as an argument:
//! the wall must see them as paths (inside the workspace) or refuse. `list` names a file
//! outside; `secret` is a link to one; `up` links out, for programs that follow links
//! while they walk a folder.

use super::*;

const INDIRECT: &[&str] = &[
    // File lists: the names inside cannot be proven when the command is decided.
    "wc --files0-from=list",
    "du --files0-from=list",
    "sort --files0-from=list",
    "cat list | wc --files0-from=-",
    "find -files0-from list -name x",
    "file -f list",
    "file --files-from=list",
    // A file as an option's value.
    "grep -fsecret notes.txt",
    "grep --file=secret notes.txt",
    "grep -r --exclude-from=secret todo .",
    "rg --ignore-file=secret todo",
    "rg -fsecret notes.txt",
    "diff --from-file=secret notes.txt",
    "diff --to-file=secret notes.txt",
    "diff -Xsecret notes.txt pats",
    "du -Xsecret .",
    "git blame --contents=secret notes.txt",
    "git diff -Osecret",
    "git ls-files --exclude-from=secret",
    "git ls-files -Xsecret",
    "sort --random-source=secret notes.txt",
    "file -msecret notes.txt",
    "file --magic-file=secret notes.txt",
    "du --exclude-from=secret .",
    "date --reference=secret",
    "tree --infofile=secret",
    // Links followed while walking a folder.
    "grep -R s3cret .",
    "grep --dereference-recursive s3cret",
    "rg -L s3cret",
    "rg --follow s3cret",
    "find -L . -name secret.txt",
    "find . -follow -name secret.txt",
    "du -La .",
    "ls -RL",
    "tree -l",
    "diff -r pair/a pair/b",
    // Without `-r` too: `diff` compares the files two folders share, through their links.
    "diff pair/a pair/b",
];

const HARMLESS: &[&str] = &[
    "grep -f pats notes.txt",
    "grep --file=pats notes.txt",
    "grep -rn todo sub",
    "diff --from-file=notes.txt pats",
    "find sub -newer notes.txt",
    "find . -maxdepth 1 -name '*.txt' -type f",
    "date -r notes.txt",
    "du -a sub",
    "ls -R sub",
    "wc -l notes.txt pats",
    "diff -r --no-dereference pair/a pair/b",
];

#[tokio::test]
async fn files_reached_through_options_and_lists_are_refused() {
    assert!(INDIRECT.len() >= 37, "the corpus keeps its size: {}", INDIRECT.len());
    assert_refused(INDIRECT).await;
}

#[tokio::test]
async fn files_named_inside_through_options_still_pass() {
    assert_read_only(HARMLESS).await;
}
