//! Options that turn a reader into a writer or a runner of programs, by their full names.

use super::*;

const RUNNING: &[&str] = &[
    // `sort` pipes its temporary files through the program: `sh` runs the input.
    "sort --compress-program=sh -S 1 notes.txt",
    "sort -S 1 --compress-program sh notes.txt",
    // Temporary files written in a folder of its choosing.
    "sort -T sub notes.txt",
    "sort --temporary-directory=sub notes.txt",
    "sort -uTsub notes.txt",
    // `tree -R` with `-L` and `-H` writes `00Tree.html` in every folder at that depth.
    "tree -R -L 1 -H . sub",
    // `file -C` compiles the magic file into `notes.txt.mgc`; `-p` sets times back.
    "file -C -m notes.txt",
    "file --compile -m notes.txt",
    "file -p notes.txt",
    "file --preserve-date notes.txt",
    // `diff -l` runs `pr`.
    "diff -l notes.txt pats",
    "diff --paginate notes.txt pats",
    // `rg` runs the program to learn the host name.
    "rg --hostname-bin=evil todo",
    "rg --hostname-bin evil todo",
    // The signature checker, `gpg.program` from a config the agent may write.
    "git log --show-signature",
    "git show --show-signature HEAD",
];

const HARMLESS: &[&str] = &[
    "sort -u notes.txt",
    "sort -t , -k 2 -n notes.txt",
    "sort -S 1 notes.txt",
    "file notes.txt",
    "file -b --mime-type notes.txt",
    "diff -u notes.txt pats",
    "rg -n todo notes.txt",
    "git log --oneline -n 5",
    "git show --stat HEAD",
    "tree -L 2 sub",
];

#[tokio::test]
async fn options_that_write_or_run_programs_are_refused() {
    assert!(RUNNING.len() >= 16, "the corpus keeps its size: {}", RUNNING.len());
    assert_refused(RUNNING).await;
}

#[tokio::test]
async fn their_harmless_neighbours_still_pass() {
    assert_read_only(HARMLESS).await;
}
