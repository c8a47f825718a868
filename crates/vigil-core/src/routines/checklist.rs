//! The `HEARTBEAT.md` checklist's machine checks (`- check `df …` when > 80: …`, read by
//! [`crate::workspace::checklist`]) as routines the watcher runs: each is a routine with that
//! check and the `notify` action, its id made from its command and condition (so a changed
//! line is another routine, approved again), listed in the routine pane beside the task
//! block's routines, never written into it.
//!
//! Must never: put a checklist check into the task block; give two different lines one id.

use sha2::{Digest, Sha256};
use vigil_protocol::{Action, Check, ExecutionMode};

use super::model::Routine;
use crate::workspace::checklist;

/// The ids of checklist checks start so.
pub const PREFIX: &str = "checklist-";

/// Whether `id` is a checklist check's.
pub fn is_checklist(id: &str) -> bool {
    id.starts_with(PREFIX)
}

/// The checklist checks of `HEARTBEAT.md`'s text (the task block left out), as routines.
pub fn routines(text: &str, now_ms: i64) -> Vec<Routine> {
    let text = super::block::strip_block(text);
    checklist::checks(&text)
        .into_iter()
        .map(|c| {
            let mut h = Sha256::new();
            h.update(c.command.as_bytes());
            h.update([0]);
            h.update(c.when.as_bytes());
            let id = format!("{PREFIX}{}", &hex::encode(h.finalize())[..10]);
            let title = match c.text.is_empty() {
                true => format!("Check `{}`", c.command),
                false => c.text.clone(),
            };
            let mut r = Routine::new(id, title, now_ms);
            r.description = format!(
                "A check in the {} checklist.",
                crate::workspace::heartbeat_file::HEARTBEAT_FILE
            );
            r.execution_mode = ExecutionMode::Isolated;
            r.check = Some(Check {
                command: c.command,
                when: c.when,
            });
            r.action = Some(Action::Notify);
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_another_check_and_the_same_line_the_same() {
        let a = routines("- check `df` when > 80: disk\n", 0);
        let b = routines("# Mine\n- check `df` when > 80: the disk\n", 5);
        let c = routines("- check `df` when > 90: disk\n", 0);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].id, b[0].id);
        assert_ne!(a[0].id, c[0].id);
        assert!(is_checklist(&a[0].id));
        assert_eq!(a[0].action, Some(Action::Notify));
    }
}
