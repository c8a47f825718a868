//! Output triggers followed: the runtime hands every process's output here
//! ([`Watch::output`]) and its end ([`Watch::process_ended`]); a line matching a live
//! routine's pattern in a process it follows fires that routine after [`OUTPUT_DEBOUNCE`].
//! A routine whose trigger names a command starts it here (approved as written, in the
//! unattended sandbox) and stops it when the routine goes or its command changes.
//!
//! Must never: start a command that is not approved as written; follow a process for a
//! routine that does not name it; block the caller (it is the runtime's event loop).

use std::collections::HashMap;

use vigil_protocol::RunOutcome;

use super::output::{output_watches, Followed, Pending, Target, OUTPUT_DEBOUNCE};
use super::Watch;
use crate::exec::{RegistryHandle, SpawnRequest};
use crate::routines::Routine;
use crate::sandbox::Layout;

/// The owner of the processes routines start (the Processes panel shows it).
pub fn owner(routine: &str) -> String {
    format!("routine:{routine}")
}

/// A command a routine started: what it is and its process id.
#[derive(Debug, Clone)]
pub(super) struct Owned {
    pub command: String,
    pub process: String,
}

impl Watch {
    /// The process registry, for the commands output triggers start (set once it runs).
    pub fn set_processes(&self, registry: RegistryHandle) {
        self.scheduler().set_processes(registry.clone());
        let _ = self.shared.registry.set(registry);
    }

    /// The process id routine `id`'s own command runs as, while it runs.
    pub fn owned_process(&self, id: &str) -> Option<String> {
        let owned = self.shared.owned.lock().unwrap_or_else(|e| e.into_inner());
        owned.get(id).map(|o| o.process.clone())
    }

    /// Whether routine `id`'s output trigger is taken up (tests wait for it).
    pub fn follows(&self, id: &str) -> bool {
        let outputs = self.shared.outputs.lock().unwrap_or_else(|e| e.into_inner());
        outputs.iter().any(|w| w.id == id)
    }

    /// Raw output of process `process_id` of `process_owner`: matched against the output
    /// triggers that follow it (one named by its id, or a routine's own command, known by
    /// its owner so its first line is never missed).
    pub fn output(&self, process_id: &str, process_owner: &str, raw: &[u8]) {
        let watches = {
            let outputs = self.shared.outputs.lock().unwrap_or_else(|e| e.into_inner());
            if outputs.is_empty() {
                return;
            }
            outputs.clone()
        };
        let mut start = Vec::new();
        {
            let mut followed = self.shared.followed.lock().unwrap_or_else(|e| e.into_inner());
            let Followed { lines, pending } = &mut *followed;
            for w in &watches {
                let follows = match &w.target {
                    // Only a process of the routine's own conversation.
                    Target::Process(p) => p == process_id && process_owner == w.owner,
                    Target::Command(_) => process_owner == owner(&w.id),
                };
                if !follows {
                    continue;
                }
                let scanner = lines.entry((w.id.clone(), process_id.to_string())).or_default();
                scanner.feed(raw, &w.pattern, |evidence| {
                    let first = !pending.contains_key(&w.id);
                    pending.entry(w.id.clone()).or_default().add(process_id, &evidence);
                    if first {
                        start.push(w.id.clone());
                    }
                });
            }
        }
        for id in start {
            let this = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(OUTPUT_DEBOUNCE).await;
                let evidence = {
                    let mut followed = this.shared.followed.lock().unwrap_or_else(|e| e.into_inner());
                    followed.pending.remove(&id)
                };
                if let Some(p) = evidence.map(Pending::finish) {
                    this.fire(&id, p).await;
                }
            });
        }
    }

    /// Process `process_id` ended: its lines are forgotten; a routine's own command is
    /// started again only when the routine changes or Vigil starts again (no restart loop).
    pub fn process_ended(&self, process_id: &str) {
        {
            let mut followed = self.shared.followed.lock().unwrap_or_else(|e| e.into_inner());
            followed.lines.retain(|(_, p), _| p != process_id);
        }
        let ended: Vec<String> = {
            let mut owned = self.shared.owned.lock().unwrap_or_else(|e| e.into_inner());
            let ids: Vec<String> = owned
                .iter()
                .filter(|(_, o)| o.process == process_id)
                .map(|(k, _)| k.clone())
                .collect();
            for id in &ids {
                owned.remove(id);
            }
            ids
        };
        for id in ended {
            if let Some(r) = self.routine(&id) {
                self.record(
                    &r,
                    RunOutcome::Skipped,
                    "the command it watches ended; it starts again when the routine changes or Vigil starts",
                    "",
                );
            }
        }
    }

    /// The routines changed: follow their output triggers, start the commands approved as
    /// written that are not running, stop those no routine names any more.
    pub(super) async fn follow_outputs(&self, routines: &[Routine]) {
        let watches = output_watches(routines);
        let wanted: HashMap<String, String> = watches
            .iter()
            .filter_map(|w| match &w.target {
                Target::Command(c) => Some((w.id.clone(), c.clone())),
                Target::Process(_) => None,
            })
            .collect();
        *self.shared.outputs.lock().unwrap_or_else(|e| e.into_inner()) = watches;
        let Some(registry) = self.shared.registry.get().cloned() else {
            return;
        };
        // Stop what no routine wants as it is now.
        let stale: Vec<(String, Owned)> = {
            let mut owned = self.shared.owned.lock().unwrap_or_else(|e| e.into_inner());
            let ids: Vec<String> = owned
                .iter()
                .filter(|(id, o)| {
                    wanted.get(*id) != Some(&o.command) || !self.routine(id).is_some_and(|r| self.approved(&r))
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| owned.remove(&id).map(|o| (id, o)))
                .collect()
        };
        for (id, o) in stale {
            let _ = registry.kill(&owner(&id), &o.process).await;
        }
        for (id, command) in wanted {
            if self.owned_process(&id).is_some() {
                continue;
            }
            let Some(r) = routines.iter().find(|r| r.id == id) else {
                continue;
            };
            if !self.approved(r) {
                self.ask_once(r).await;
                continue;
            }
            match self.start_command(&registry, &id, &command).await {
                Ok(process) => {
                    let mut owned = self.shared.owned.lock().unwrap_or_else(|e| e.into_inner());
                    owned.insert(id.clone(), Owned { command, process });
                }
                Err(why) => self.record(r, RunOutcome::Failed, &why, ""),
            }
        }
    }

    /// Starts routine `id`'s own command in the unattended sandbox (the workspace
    /// writable, the network as for runs nobody watches unless granted to the routine).
    async fn start_command(&self, registry: &RegistryHandle, id: &str, command: &str) -> Result<String, String> {
        let (sandbox, settings) = (self.shared.deps.sandbox)();
        let settings = settings.for_routine(Some(id));
        let layout = Layout {
            workspace: self.shared.deps.workspace.clone(),
            cwd: self.shared.deps.workspace.clone(),
            data_dir: self.shared.deps.data_dir.clone(),
            settings,
            attended: false,
            home: self.shared.deps.home.clone(),
            read_only: false,
        };
        let wrapped = sandbox
            .wrap(&layout)
            .map_err(|why| format!("the sandbox cannot start ({why}), so its command did not start"))?
            .without_zygote();
        let mut req = SpawnRequest::new(owner(id), command, &self.shared.deps.workspace);
        req.pty = false;
        req.sandbox = Some(wrapped);
        let info = registry
            .spawn(req)
            .await
            .map_err(|e| format!("its command could not start: {e}"))?;
        Ok(info.id)
    }
}
