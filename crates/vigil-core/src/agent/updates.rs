//! The `## Background Updates` block at the top of a conversation turn's context: every
//! update waiting in the conversation's mailbox (seed 003 §4.5), however long the user was
//! away, each with the id the agent opens it by (the `updates` tool, [`crate::tools`]).
//!
//! Owns the shape and the size of that block; the bounds are stated in `docs/updates.md`.
//!
//! Must never: leave an update out (the turn acknowledges every one it was shown, so one left
//! out would never reach the agent), or grow without a bound on what one update costs.
//!
//! Three shapes, by size:
//! - *In full* (up to [`FULL_BOUND`] characters): one entry per distinct update, the newest
//!   [`DETAILED_UPDATES`] with their detail, the older ones condensed to one line each.
//! - *Digest* (above it): one line per distinct update, its summary cut to
//!   [`DIGEST_SUMMARY_CHARS`], with its time and id; the agent opens the ones it needs.
//! - Past [`DIGEST_BOUND`] characters of digest, the oldest lines keep only kind, time and id.
//!
//! An update that repeats another word for word (seed 003's `dedupe_key`: the same thing said
//! again, a routine saying "all fine" every hour) is one entry, where it last came, with how
//! often it came and every id.

use std::collections::HashMap;

use super::context::short_time;
use crate::session::MailboxEvent;
use crate::tools::UPDATES_TOOL;

/// Heads the mailbox block at the top of a primary turn's context (seed 003 §4.5).
pub const BACKGROUND_UPDATES_HEADING: &str = "## Background Updates";

/// Up to this many characters, the block lists every update in full (the newest with their
/// detail); above, it is a digest. About 4 000 tokens.
pub const FULL_BOUND: usize = 16_000;

/// In full, this many of the newest distinct updates keep their detail.
pub const DETAILED_UPDATES: usize = 20;

/// A summary is cut to this many characters on a condensed line…
pub const LINE_SUMMARY_CHARS: usize = 160;

/// …and to this many on a digest line.
pub const DIGEST_SUMMARY_CHARS: usize = 100;

/// Past this many characters of digest (about 12 000 tokens), the oldest lines lose their
/// summary: kind, time and id stay, so the agent can still open each one.
pub const DIGEST_BOUND: usize = 48_000;

/// One distinct update: the events that say it, oldest first.
struct Group<'a> {
    kind: &'a str,
    summary: &'a str,
    detail: Option<&'a str>,
    ids: Vec<&'a str>,
    /// When and where (mailbox index) it last came.
    last_at: i64,
    last_index: usize,
}

impl Group<'_> {
    /// `- [kind] summary (when, id …)`, the summary cut to `cut` characters (`None`: left out).
    fn line(&self, cut: Option<usize>) -> String {
        let mut out = format!("- [{}]", self.kind);
        if let Some(cut) = cut {
            out.push(' ');
            out.push_str(&one_line(self.summary, cut));
        }
        out.push_str(" (");
        out.push_str(&self.when_and_ids());
        out.push(')');
        out
    }

    /// `2026-11-24 07:00, id X`, or for a repeat `came 3 times, the last at …; ids X, Y, Z`.
    fn when_and_ids(&self) -> String {
        if self.ids.len() == 1 {
            format!("{}, id {}", short_time(self.last_at), self.ids[0])
        } else {
            format!(
                "came {} times, the last at {}; ids {}",
                self.ids.len(),
                short_time(self.last_at),
                self.ids.join(", ")
            )
        }
    }

    /// The condensed line, and under it the detail, indented.
    fn detailed(&self) -> String {
        let mut out = self.line(Some(LINE_SUMMARY_CHARS));
        if let Some(detail) = self.detail {
            out.push_str("\n  Detail: ");
            out.push_str(&detail.trim().replace('\n', "\n  "));
        }
        out
    }
}

/// The block from a mailbox snapshot, oldest first as deposited; `None` for an empty one.
/// Every event is acknowledged after the turn: the user was shown each as it came.
pub fn background_updates(mailbox: &[MailboxEvent]) -> Option<String> {
    if mailbox.is_empty() {
        return None;
    }
    let groups = distinct(mailbox);
    let full = in_full(&groups, mailbox.len());
    if full.chars().count() <= FULL_BOUND {
        return Some(full);
    }
    Some(digest(&groups, mailbox))
}

/// The distinct updates, in the order of their last arrival.
fn distinct(mailbox: &[MailboxEvent]) -> Vec<Group<'_>> {
    let mut by_text: HashMap<(&str, &str, Option<&str>), Group> = HashMap::new();
    for (i, e) in mailbox.iter().enumerate() {
        let kind = if e.event_type.is_empty() {
            e.source.as_str()
        } else {
            e.event_type.as_str()
        };
        let detail = e.detail.as_deref().filter(|d| !d.trim().is_empty());
        let group = by_text.entry((kind, &e.summary, detail)).or_insert(Group {
            kind,
            summary: &e.summary,
            detail,
            ids: Vec::new(),
            last_at: e.created_at,
            last_index: i,
        });
        group.ids.push(&e.event_id);
        group.last_at = e.created_at;
        group.last_index = i;
    }
    let mut groups: Vec<Group> = by_text.into_values().collect();
    groups.sort_by_key(|g| g.last_index);
    groups
}

fn in_full(groups: &[Group], events: usize) -> String {
    let mut out = String::from(BACKGROUND_UPDATES_HEADING);
    let older = groups.len().saturating_sub(DETAILED_UPDATES);
    if older > 0 {
        let different = if groups.len() < events {
            format!(" ({} different)", groups.len())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n{events} updates{different}: the newest {DETAILED_UPDATES} with their detail, the {older} older ones in \
             one line each. Call the `{UPDATES_TOOL}` tool with an id to read that update in full."
        ));
    }
    for g in &groups[..older] {
        out.push('\n');
        out.push_str(&g.line(Some(LINE_SUMMARY_CHARS)));
    }
    for g in &groups[older..] {
        out.push('\n');
        out.push_str(&g.detailed());
    }
    out
}

fn digest(groups: &[Group], mailbox: &[MailboxEvent]) -> String {
    // Newest first, so the lines that lose their summary past the bound are the oldest.
    let mut lines: Vec<String> = Vec::with_capacity(groups.len());
    let mut used = 0;
    let mut bare = 0usize;
    for g in groups.iter().rev() {
        let line = g.line(Some(DIGEST_SUMMARY_CHARS));
        // Once one line lost its summary, every older one does: the cut is at one point in time.
        let line = if bare == 0 && used + line.chars().count() <= DIGEST_BOUND {
            line
        } else {
            bare += 1;
            g.line(None)
        };
        used += line.chars().count() + 1;
        lines.push(line);
    }
    lines.reverse();
    let first = mailbox.iter().map(|e| e.created_at).min().unwrap_or_default();
    let last = mailbox.iter().map(|e| e.created_at).max().unwrap_or_default();
    let mut out = String::from(BACKGROUND_UPDATES_HEADING);
    out.push_str(&format!(
        "\n{} updates came from {} to {}: more than fit here in full ({FULL_BOUND} characters), so this is a \
         digest, one line for each, oldest first. Call the `{UPDATES_TOOL}` tool with an id to read that update \
         in full before you tell the user about it.",
        mailbox.len(),
        short_time(first),
        short_time(last),
    ));
    if bare > 0 {
        out.push_str(&format!(
            " The oldest {bare} lines name only kind, time and id: there were too many to quote ({DIGEST_BOUND} \
             characters)."
        ));
    }
    for line in lines {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

/// The first line of `text`, at most `cut` characters (the cut marked with "…").
fn one_line(text: &str, cut: usize) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let more_lines = text.trim().lines().count() > 1;
    if first.chars().count() <= cut && !more_lines {
        return first.to_string();
    }
    let mut out: String = first.chars().take(cut).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(id: &str, kind: &str, summary: &str, detail: Option<&str>, at: i64) -> MailboxEvent {
        MailboxEvent {
            event_id: id.into(),
            source: "main".into(),
            summary: summary.into(),
            detail: detail.map(Into::into),
            created_at: at,
            run_id: None,
            event_type: kind.into(),
            priority: 1,
            dedupe_key: None,
            claim: None,
        }
    }

    const T: i64 = 1_700_000_000_000;

    #[test]
    fn a_few_updates_are_listed_whole_with_their_detail_and_id() {
        let mailbox = [
            update(
                "u1",
                "heartbeat_result",
                "Disk /home is 91% full.",
                Some("Disk /home is 91% full.\nbiggest: ~/Videos"),
                T,
            ),
            update("u2", "job_completed", "Time to drink water.", None, T + 60_000),
        ];
        let text = background_updates(&mailbox).unwrap();
        let at = |ms| short_time(ms);
        assert_eq!(
            text,
            format!(
                "## Background Updates\n- [heartbeat_result] Disk /home is 91% full. ({}, id u1)\n  Detail: Disk /home is \
                 91% full.\n  biggest: ~/Videos\n- [job_completed] Time to drink water. ({}, id u2)",
                at(T),
                at(T + 60_000)
            )
        );
        assert!(background_updates(&[]).is_none());
    }

    #[test]
    fn an_update_repeated_word_for_word_is_one_entry_where_it_last_came_with_every_id() {
        let mailbox = [
            update("w1", "job_completed", "Time to drink water.", None, T),
            update("d1", "heartbeat_result", "Disk /home is 91% full.", None, T + 1),
            update("w2", "job_completed", "Time to drink water.", None, T + 2),
            update("w3", "job_completed", "Time to drink water.", None, T + 3),
        ];
        let text = background_updates(&mailbox).unwrap();
        assert_eq!(text.matches("drink water").count(), 1, "{text}");
        assert!(
            text.contains(&format!(
                "(came 3 times, the last at {}; ids w1, w2, w3)",
                short_time(T + 3)
            )),
            "{text}"
        );
        assert!(
            text.find("Disk /home").unwrap() < text.find("drink water").unwrap(),
            "{text}"
        );
    }

    #[test]
    fn past_twenty_the_older_updates_are_one_line_each_and_none_is_left_out() {
        let mailbox: Vec<MailboxEvent> = (0..60)
            .map(|i| {
                update(
                    &format!("id-{i}"),
                    "job_completed",
                    &format!("Result #{i}."),
                    Some(&format!("Details of #{i}.")),
                    T + i,
                )
            })
            .collect();
        let mut with_repeat = mailbox.clone();
        with_repeat.push(update(
            "id-60",
            "job_completed",
            "Result #59.",
            Some("Details of #59."),
            T + 60,
        ));
        let text = background_updates(&with_repeat).unwrap();
        assert!(text.contains("61 updates (60 different): the newest 20 with their detail, the 40 older ones"));
        let text = background_updates(&mailbox).unwrap();
        assert!(text.chars().count() <= FULL_BOUND, "this many short ones fit in full");
        assert!(text.contains("60 updates: the newest 20 with their detail, the 40 older ones in one line each."));
        for i in 0..60 {
            assert!(text.contains(&format!("Result #{i}. (")), "#{i} is listed: {text}");
            assert!(text.contains(&format!("id id-{i})")), "#{i}'s id: {text}");
            assert_eq!(
                text.contains(&format!("Details of #{i}.")),
                i >= 40,
                "#{i}'s detail only when new: {text}"
            );
        }
    }

    #[test]
    fn above_the_bound_every_update_is_a_digest_line_with_its_id() {
        let long = "A long report line that goes on. ".repeat(40);
        let mailbox: Vec<MailboxEvent> = (0..60)
            .map(|i| {
                update(
                    &format!("id-{i}"),
                    "job_completed",
                    &format!("Backup #{i} done: {long}"),
                    Some(&long),
                    T + i,
                )
            })
            .collect();
        let text = background_updates(&mailbox).unwrap();
        assert!(text.contains("so this is a digest, one line for each"), "{text}");
        assert!(!text.contains("Detail:"), "{text}");
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(lines.len(), 60);
        for (i, line) in lines.iter().enumerate() {
            assert!(
                line.starts_with(&format!("- [job_completed] Backup #{i} done: ")),
                "{line}"
            );
            assert!(line.ends_with(&format!(", id id-{i})")), "{line}");
            // The summary cut at its bound, and marked so.
            let summary = &line["- [job_completed] ".len()..line.find(" (").unwrap()];
            assert_eq!(summary.chars().count(), DIGEST_SUMMARY_CHARS + 1, "{line}");
            assert!(summary.ends_with('…'));
        }
    }

    #[test]
    fn past_the_digest_bound_the_oldest_lines_keep_only_their_id_and_none_is_dropped() {
        let long = "x".repeat(300);
        let mailbox: Vec<MailboxEvent> = (0..2000)
            .map(|i| {
                update(
                    &format!("id-{i}"),
                    "job_completed",
                    &format!("Check #{i} {long}"),
                    None,
                    T + i,
                )
            })
            .collect();
        let text = background_updates(&mailbox).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(lines.len(), 2000);
        for (i, line) in lines.iter().enumerate() {
            assert!(line.ends_with(&format!(", id id-{i})")), "{line}");
        }
        let bare = lines.iter().take_while(|l| !l.contains("Check #")).count();
        assert!(
            bare > 0 && lines[bare..].iter().all(|l| l.contains("Check #")),
            "the oldest lose their text first"
        );
        assert!(
            text.contains(&format!("The oldest {bare} lines name only kind, time and id")),
            "{text}"
        );
        let quoted: usize = lines[bare..].iter().map(|l| l.chars().count() + 1).sum();
        assert!(quoted <= DIGEST_BOUND, "{quoted}");
    }
}
