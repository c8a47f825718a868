//! # watch
//!
//! Owns what wakes a routine besides the clock (issue 33): file triggers (inotify, debounced,
//! with the changed paths and a bounded diff as evidence), the checks that decide without a
//! model whether anything happened (a command in the read-only sandbox and a condition), the
//! approval of a check or URL as it was written, and the bounds on fires (at most
//! [`DEFAULT_MAX_FIRES_PER_HOUR`] an hour, fires during a run merged into the next).
//!
//! - [`shape`] — the one shape (`trigger`, `check`, `action`) checked, conditions parsed.
//! - [`check`] — a check run in the read-only sandbox, and its verdict.
//! - [`approval`] — the approvals, as hashes in the data folder.
//! - [`plan`] — which folders the file triggers need watched, which routine a path is for.
//! - [`files`] — the inotify instance.
//! - [`diff`] — the evidence of a file change.
//! - [`url`] — URL triggers: a look every `every`, a fire on a change.
//! - [`webhook`] — the listener (loopback, unless a setting names another address), open
//!   only while a webhook routine exists.
//! - [`output`] — output triggers: a process's output as bounded lines, matched.
//! - `follow` — the processes output triggers follow, and the commands they start.
//! - `checklist` — the `HEARTBEAT.md` checklist's checks, run on the heartbeat's interval.
//! - `fire` — one fire from trigger to action: pause, merge, approval, check, limit, run.
//!
//! A fire ends in one call: [`crate::routines::Scheduler::run_fired`] (the run module takes
//! it from there). Quiet checks end before it: nothing runs, nothing is billed.
//!
//! Must never: run a check or look at a URL the user did not approve as written; run a
//! check outside the read-only sandbox; drop a fire silently (a paused routine's fires are
//! recorded in its history); call the model while nothing happened.

pub mod approval;
pub mod check;
mod checklist;
pub mod diff;
pub mod files;
mod fire;
mod follow;
pub mod output;
pub mod plan;
pub mod shape;
pub mod url;
pub mod webhook;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use vigil_protocol::Trigger;

use crate::routines::{Routine, Scheduler};
use crate::sandbox::{Sandbox, SandboxSettings};

/// A routine that fires more often than this in an hour pauses itself.
pub const DEFAULT_MAX_FIRES_PER_HOUR: usize = 12;

/// The sandbox and the user's sandbox settings as they are now (they change in Settings).
pub type SandboxSource = Arc<dyn Fn() -> (Sandbox, SandboxSettings) + Send + Sync>;

/// What the watcher works with, all owned elsewhere.
#[derive(Clone)]
pub struct WatchDeps {
    pub scheduler: Scheduler,
    pub data_dir: PathBuf,
    pub workspace: PathBuf,
    pub sandbox: SandboxSource,
    /// `$HOME`, for the sandbox's hidden list.
    pub home: Option<PathBuf>,
}

/// The watcher: a cheap clonable handle.
#[derive(Clone)]
pub struct Watch {
    shared: Arc<Shared>,
}

struct Shared {
    deps: WatchDeps,
    approvals: approval::Approvals,
    memory: check::Memory,
    /// `std` lock: each routine's fires, pause and merged evidence; never held across an await.
    state: Mutex<HashMap<String, RoutineWatch>>,
    /// `std` lock: held while the counters are written, so the last write is the newest.
    saving: Mutex<()>,
    /// Rebuild the file watches now (a routine changed).
    reload: Notify,
    max_per_hour: std::sync::atomic::AtomicUsize,
    /// URL triggers look this often instead of their `every` (tests; `None` in the app).
    url_every: Option<std::time::Duration>,
    /// `std` lock: each URL trigger's last look, with the URL it was of.
    looks: Mutex<HashMap<String, (String, url::Look)>>,
    /// Webhook secrets and port (data folder).
    webhooks: webhook::Secrets,
    /// `tokio` lock: the webhook listener while a webhook routine exists.
    listener: tokio::sync::Mutex<Option<webhook::Listener>>,
    /// `std` lock: the address webhooks are called on beyond loopback, when the user's
    /// setting names one (`None`: loopback only).
    webhook_bind: Mutex<Option<std::net::IpAddr>>,
    /// `std` lock: the routines whose file watches are in place now (tests wait for it
    /// rather than for a pause after the status shows).
    armed: Mutex<std::collections::HashSet<String>>,
    /// `std` lock: the live output triggers, compiled.
    outputs: Mutex<Vec<output::OutputWatch>>,
    /// `std` lock: the lines of each followed process and the evidence waiting to fire.
    followed: Mutex<output::Followed>,
    /// `std` lock: the commands output triggers started, by routine.
    owned: Mutex<HashMap<String, follow::Owned>>,
    /// The process registry, once it runs (output triggers start their commands there).
    registry: OnceLock<crate::exec::RegistryHandle>,
    /// The heartbeat's interval now (`None`: off): the checklist's checks run on it.
    checklist_every: OnceLock<Interval>,
}

/// How often something runs now, read each time (it changes in Settings).
pub type Interval = Arc<dyn Fn() -> Option<std::time::Duration> + Send + Sync>;

/// One routine's bounds and counters. The counters and the pause are kept in the data
/// folder ([`COUNTERS_FILE`]): a restart neither resets the hourly limit nor resumes a
/// paused routine nor forgets today's fires.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct RoutineWatch {
    /// When it fired in the last hour (ms).
    #[serde(default)]
    fires: VecDeque<i64>,
    /// Paused by the rate limit: why.
    #[serde(default)]
    paused: Option<String>,
    /// A run of it is going: later fires wait here, merged.
    #[serde(skip)]
    running: bool,
    #[serde(skip)]
    merged: Option<String>,
    #[serde(default)]
    fired_today: u32,
    #[serde(default)]
    day: i64,
    #[serde(default)]
    last_fired_at: Option<i64>,
    #[serde(default)]
    last_evidence: Option<String>,
    /// The fingerprint the user was last asked to approve (asked once per text).
    #[serde(skip)]
    asked: Option<String>,
}

/// The fire counters of every routine, under the data folder.
pub const COUNTERS_FILE: &str = "routine_fires.json";

/// "Watching `logs/`", "Checking `df …` on its schedule".
pub fn describe_trigger(r: &Routine) -> String {
    match &r.trigger {
        Some(Trigger::File { paths, .. }) => {
            let shown: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
            format!("Watching {}", shown.join(", "))
        }
        Some(Trigger::Output { process, pattern }) => format!("Watching the output of {process} for `{pattern}`"),
        Some(Trigger::Url { url, every, .. }) => format!("Watching {url} every {}", every.as_deref().unwrap_or("5m")),
        Some(Trigger::Webhook) => "On a webhook call".into(),
        Some(Trigger::Schedule) | None => match r.schedule_text() {
            Some(s) => format!("On its schedule ({s})"),
            None => "Once, at its time".into(),
        },
    }
}

impl Watch {
    pub fn new(deps: WatchDeps) -> Self {
        Self::with_max_per_hour(deps, DEFAULT_MAX_FIRES_PER_HOUR)
    }

    /// A watcher whose routines pause after `max` fires an hour (tests use a small one).
    pub fn with_max_per_hour(deps: WatchDeps, max: usize) -> Self {
        Self::with_limits(deps, max, None)
    }

    /// A watcher with its bounds set: the hourly limit, and how often URL triggers look
    /// (tests: a minute is too long to wait for).
    pub fn with_limits(deps: WatchDeps, max: usize, url_every: Option<std::time::Duration>) -> Self {
        let approvals = approval::Approvals::open(&deps.data_dir);
        let webhooks = webhook::Secrets::open(&deps.data_dir);
        let counters = load_counters(&deps.data_dir);
        Self {
            shared: Arc::new(Shared {
                deps,
                approvals,
                memory: check::Memory::default(),
                state: Mutex::new(counters),
                saving: Mutex::new(()),
                reload: Notify::new(),
                max_per_hour: std::sync::atomic::AtomicUsize::new(max),
                url_every,
                looks: Mutex::new(HashMap::new()),
                webhooks,
                listener: tokio::sync::Mutex::new(None),
                webhook_bind: Mutex::new(None),
                armed: Mutex::default(),
                outputs: Mutex::new(Vec::new()),
                followed: Mutex::new(output::Followed::default()),
                owned: Mutex::new(HashMap::new()),
                registry: OnceLock::new(),
                checklist_every: OnceLock::new(),
            }),
        }
    }

    /// Writes every routine's counters and pause to the data folder.
    fn save_counters(&self) {
        let _writing = self.shared.saving.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = {
            let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec(&*state).unwrap_or_default()
        };
        let path = self.shared.deps.data_dir.join(COUNTERS_FILE);
        if let Err(e) = crate::durable::write_atomic(&path, &bytes) {
            tracing::warn!("the routines' fire counters could not be saved: {e}");
        }
    }

    /// Sets how many fires an hour pause a routine (benchmarks fire far more often).
    pub fn set_max_fires_per_hour(&self, max: usize) {
        self.shared
            .max_per_hour
            .store(max, std::sync::atomic::Ordering::Relaxed);
    }

    fn scheduler(&self) -> &Scheduler {
        &self.shared.deps.scheduler
    }

    /// The live routines of the task block.
    /// The live routines of the task block, then the checklist's checks.
    fn routines(&self) -> Vec<Routine> {
        match self.scheduler().deps().store.read() {
            Ok(state) => {
                let mut all: Vec<Routine> = state
                    .routines()
                    .entries()
                    .iter()
                    .filter_map(|e| e.routine.as_ref().ok())
                    .filter(|r| r.live())
                    .cloned()
                    .collect();
                let now = self.scheduler().deps().clock.now_ms();
                // A held file's checklist is not the user's for sure (routines::store::trust).
                if !state.held {
                    all.extend(crate::routines::checklist::routines(&state.text, now));
                }
                all
            }
            Err(_) => Vec::new(),
        }
    }

    /// The task file's text now, to tell whether it changed.
    fn task_text(&self) -> Option<String> {
        self.scheduler().deps().store.read().ok().map(|s| s.text.clone())
    }

    fn routine(&self, id: &str) -> Option<Routine> {
        self.routines().into_iter().find(|r| r.id == id)
    }

    /// The check sandbox as the user's settings are now.
    fn check_sandbox(&self) -> check::CheckSandbox {
        let (sandbox, settings) = (self.shared.deps.sandbox)();
        check::CheckSandbox {
            sandbox,
            settings,
            data_dir: self.shared.deps.data_dir.clone(),
            workspace: self.shared.deps.workspace.clone(),
            home: self.shared.deps.home.clone(),
        }
    }

    fn network_granted(&self, id: &str) -> bool {
        (self.shared.deps.sandbox)().1.network_routines.iter().any(|g| g == id)
    }

    /// Approves routine `id`'s check or URL as written now; a pause by the rate limit ends.
    pub fn approve(&self, id: &str) -> Result<(), String> {
        let r = self
            .routine(id)
            .ok_or_else(|| format!("there is no routine \"{id}\" in use"))?;
        self.shared
            .approvals
            .approve(&r, self.network_granted(id))
            .map_err(|e| format!("the approval could not be saved: {e}"))?;
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let w = state.entry(id.to_string()).or_default();
            w.paused = None;
            w.fires.clear();
            w.asked = None;
        }
        self.save_counters();
        self.publish(&r);
        self.scheduler().changed();
        // An output trigger's command may start now. (Only then: a reload makes the file
        // watches again, and a change while they are made is not seen.)
        if matches!(r.trigger, Some(Trigger::Output { .. })) {
            self.reload();
        }
        Ok(())
    }

    /// Whether `r` as written now is approved (or needs no approval).
    pub fn approved(&self, r: &Routine) -> bool {
        self.shared.approvals.approved(r, self.network_granted(&r.id))
    }

    /// Puts `r`'s watch status where the routine list finds it.
    fn publish(&self, r: &Routine) {
        if r.trigger.is_none() && r.check.is_none() {
            return;
        }
        let granted = self.network_granted(&r.id);
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let w = state.get(&r.id);
        let mut summary = describe_trigger(r);
        if matches!(r.trigger, Some(Trigger::Webhook)) {
            let port = self.webhook_port();
            let host = match self.webhook_host() {
                std::net::IpAddr::V6(a) => format!("[{a}]"),
                a if a.is_unspecified() => "<this machine's address>".into(),
                a => a.to_string(),
            };
            summary = match port {
                Some(port) => format!(
                    "{summary}: POST http://{host}:{port}/hook/{}/{}",
                    r.id,
                    self.shared.webhooks.secret(&r.id)
                ),
                None => format!("{summary} (the listener is not running)"),
            };
        }
        let status = vigil_protocol::WatchStatus {
            summary,
            approved: self.shared.approvals.approved(r, granted),
            approval_text: approval::approval_text(r, granted),
            fired_today: w.map_or(0, |w| w.fired_today),
            last_fired_at: w.and_then(|w| w.last_fired_at),
            last_evidence: w.and_then(|w| w.last_evidence.clone()),
            paused: w.and_then(|w| w.paused.clone()),
        };
        drop(state);
        self.scheduler().deps().runlog.set_watch(&r.id, status);
    }

    /// Whether routine `id`'s file watches are in place: a change from now on fires it.
    pub fn armed(&self, id: &str) -> bool {
        self.shared.armed.lock().unwrap_or_else(|e| e.into_inner()).contains(id)
    }

    /// The webhook listener's port, while it listens.
    pub fn webhook_port(&self) -> Option<u16> {
        self.shared
            .listener
            .try_lock()
            .ok()
            .and_then(|l| l.as_ref().map(|l| l.port))
    }

    /// Where webhooks are called on: the address the user's setting names, else loopback.
    fn webhook_host(&self) -> std::net::IpAddr {
        let bind = *self.shared.webhook_bind.lock().unwrap_or_else(|e| e.into_inner());
        bind.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    }

    /// The user's setting: webhooks are called on `bind` beyond loopback (`None`, or an
    /// address that does not parse: loopback only). A listener on another address is
    /// closed and opened again on this one.
    pub fn set_webhook_bind(&self, bind: Option<&str>) {
        let bind = bind.and_then(|b| b.trim().parse::<std::net::IpAddr>().ok());
        let changed = {
            let mut now = self.shared.webhook_bind.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *now, bind) != bind
        };
        if changed {
            self.reload();
        }
    }

    /// Listens while a live webhook routine exists; closes the socket when none does.
    async fn serve_webhooks(&self, routines: &[Routine]) {
        let ids: Vec<String> = routines
            .iter()
            .filter(|r| matches!(r.trigger, Some(Trigger::Webhook)))
            .map(|r| r.id.clone())
            .collect();
        let mut listener = self.shared.listener.lock().await;
        // The same routines: the socket stays (a call arriving now is not refused, and the
        // per-minute counts go on).
        let host = self.webhook_host();
        if listener.as_ref().is_none_or(|l| l.routines != ids || l.host != host) {
            listener.take();
            if ids.is_empty() {
                return;
            }
            for id in &ids {
                self.shared.webhooks.secret(id);
            }
            match webhook::listen(self.clone(), host, ids).await {
                Ok(l) => *listener = Some(l),
                Err(e) => tracing::warn!("webhook triggers cannot listen ({e})"),
            }
        }
        drop(listener);
        for r in routines.iter().filter(|r| matches!(r.trigger, Some(Trigger::Webhook))) {
            self.publish(r);
        }
    }

    /// The routines changed: rebuild the watches.
    pub fn reload(&self) {
        self.shared.reload.notify_one();
    }

    /// The watching loop: file triggers until `shutdown`. An idle loop is one descriptor in
    /// the reactor and no timer.
    pub async fn run(self, shutdown: CancellationToken) {
        tokio::spawn(self.clone().checklist_loop(shutdown.clone()));
        let workspace = self.shared.deps.workspace.clone();
        let mut copies = diff::Copies::default();
        let mut pending: HashMap<String, (Instant, BTreeSet<PathBuf>)> = HashMap::new();
        let mut url_tasks: Vec<tokio::task::AbortHandle> = Vec::new();
        loop {
            let text = self.task_text();
            let routines = self.routines();
            for r in &routines {
                self.publish(r);
            }
            let folders = (self.shared.deps.sandbox)().1.writable;
            let (watches, problems) = plan::file_watches(&routines, &workspace, &folders);
            for (id, p) in problems {
                tracing::warn!("routine {id}'s file trigger cannot watch: {p}");
            }
            for t in url_tasks.drain(..) {
                t.abort();
            }
            for r in &routines {
                if let Some(w) = r.trigger.as_ref().and_then(|t| url::UrlWatch::from_trigger(&r.id, t)) {
                    let this = self.clone();
                    let stop = shutdown.clone();
                    url_tasks.push(tokio::spawn(this.watch_url(w, stop)).abort_handle());
                }
            }
            self.serve_webhooks(&routines).await;
            self.follow_outputs(&routines).await;
            // Rebuilt below: until then no routine's change is sure to be seen.
            self.shared.armed.lock().unwrap_or_else(|e| e.into_inner()).clear();
            let mut files = match files::Files::new() {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!("file triggers cannot watch ({e})");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = self.shared.reload.notified() => continue,
                    }
                }
            };
            // The task file's folder: a routine changed by hand or by a tool.
            files.watch(&workspace, false);
            if self.task_text() != text {
                // Changed before the task file was watched: its event is lost, so again now.
                continue;
            }
            for w in &watches {
                for (dir, deep) in &w.dirs {
                    files.watch(dir, *deep);
                    keep_copies(&mut copies, dir, *deep, w);
                }
            }
            *self.shared.armed.lock().unwrap_or_else(|e| e.into_inner()) =
                watches.iter().map(|w| w.id.clone()).collect();
            loop {
                let next = pending.values().map(|(at, _)| *at).min();
                let sleep = async {
                    match next {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        self.shared.listener.lock().await.take();
                        return;
                    }
                    _ = self.shared.reload.notified() => break,
                    seen = files.next_changes() => {
                        let seen = match seen {
                            Ok(s) => s,
                            Err(e) => {
                                tracing::warn!("file triggers stopped watching ({e})");
                                break;
                            }
                        };
                        let task_file = workspace.join("HEARTBEAT.md");
                        let mut changed = seen.paths.contains(&task_file);
                        for path in seen.paths.iter().filter(|p| plan::may_fire(p, &workspace)) {
                            for w in watches.iter().filter(|w| w.matches(path)) {
                                let entry = pending.entry(w.id.clone()).or_insert_with(|| (Instant::now(), BTreeSet::new()));
                                entry.0 = Instant::now() + w.debounce;
                                entry.1.insert(path.clone());
                            }
                        }
                        changed |= seen.overflow;
                        if changed {
                            break;
                        }
                    }
                    () = sleep => {
                        let now = Instant::now();
                        let due: Vec<String> = pending.iter().filter(|(_, (at, _))| *at <= now).map(|(id, _)| id.clone()).collect();
                        for id in due {
                            let Some((_, paths)) = pending.remove(&id) else { continue };
                            let evidence = file_evidence(&mut copies, &paths, &workspace);
                            let this = self.clone();
                            tokio::spawn(async move { this.fire(&id, evidence).await });
                        }
                    }
                }
            }
        }
    }
}

/// Copies of the small text files a trigger matches now, so its first change has a diff.
fn keep_copies(copies: &mut diff::Copies, dir: &Path, deep: bool, w: &plan::FileWatch) {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > 2000 {
                return;
            }
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() && deep => stack.push(p),
                Ok(t) if t.is_file() && w.matches(&p) => copies.keep(&p),
                _ => {}
            }
        }
    }
}

/// Every path of one fire, and what changed in each, bounded.
fn file_evidence(copies: &mut diff::Copies, paths: &BTreeSet<PathBuf>, workspace: &Path) -> String {
    let shown = |p: &Path| {
        p.strip_prefix(workspace)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let mut out = format!(
        "Files changed: {}",
        paths.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
    );
    for p in paths {
        let part = copies.change(p, &shown(p));
        if out.len() + part.len() + 2 > diff::MAX_EVIDENCE {
            out.push_str("\n\n(more changes not shown)");
            break;
        }
        out.push_str("\n\n");
        out.push_str(&part);
    }
    out
}

/// The counters saved by the last run (none, or unreadable: all start at zero).
fn load_counters(data_dir: &Path) -> HashMap<String, RoutineWatch> {
    std::fs::read(data_dir.join(COUNTERS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}
