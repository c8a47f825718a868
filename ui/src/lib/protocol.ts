// Generated from crates/vigil-protocol by `UPDATE_BINDINGS=1 cargo test -p vigil-protocol`.
// Do not edit by hand.

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;

export type Op = { "type": "user_message", text: string, session_id?: string, 
/**
 * Images sent with the text (`[{"path": "/abs/shot.png"}]`): each is read, checked,
 * downscaled and stored with the conversation before the message is saved; one that
 * cannot be read is an error and nothing is sent.
 */
attachments?: Array<Attachment>, } | { "type": "interrupt", session_id?: string, } | { "type": "create_session", title?: string, } | { "type": "rename_session", session_id: string, title: string, } | { "type": "delete_session", session_id: string, } | { "type": "approval", id: string, decision: ApprovalDecision, } | { "type": "start_process", command: string, cwd?: string, } | { "type": "process_input", process_id: string, data: string, } | { "type": "process_kill", process_id: string, } | { "type": "process_resize", process_id: string, cols: number, rows: number, } | { "type": "shutdown" } | { "type": "wake", reason?: WakeReason, } | { "type": "list_routines" } | { "type": "add_routine", routine: RoutineDraft, } | { "type": "update_routine", id: string, changes: RoutineDraft, } | { "type": "remove_routine", id: string, hard?: boolean, } | { "type": "restore_routine", id: string, } | { "type": "run_routine", id: string, } | { "type": "set_routine_enabled", id: string, enabled: boolean, } | { "type": "retry_routine_run", id: string, run_id: string, } | { "type": "dismiss_routine_run", id: string, run_id: string, } | { "type": "approve_routine", id: string, } | { "type": "trust_heartbeat_file" } | { "type": "health" } | { "type": "set_continuation_limit", session_id: string, limit?: number, } | { "type": "search_history", query: string, } | { "type": "list_mcp_servers" } | { "type": "add_mcp_servers", json: string, secret?: Array<McpSecretField>, } | { "type": "remove_mcp_server", name: string, } | { "type": "set_mcp_server_trusted", name: string, trusted: boolean, } | { "type": "restart_mcp_server", name: string, } | { "type": "window_input" } | { "type": "channels", op: ChannelOp, };

export type Attachment = { 
/**
 * An absolute path the runtime can read (the desktop app writes pasted images to a file
 * under the data folder first).
 */
path: string, 
/**
 * What the user calls the image: the file's name where it was picked, pasted or dropped.
 * A refusal names it instead of the path's file name, because a pasted image is staged
 * under a generated name the user never saw.
 */
name?: string, };

export type Scope = "primary" | "heartbeat" | "job" | "app";

export type Source = "user" | "agent" | "provider" | "heartbeat" | "scheduler" | "exec" | "system" | "background";

export type EventEnvelope = { 
/**
 * Unique per event; lets the UI drop duplicates after a reconnect.
 */
id: string, 
/**
 * Milliseconds since the Unix epoch.
 */
ts: number, session_id: string | null, scope: Scope, source: Source, 
/**
 * The turn (run) this event belongs to, if any.
 */
run_id: string | null, } & ({ "type": "turn_started", user_text: string, } | { "type": "text_delta", text: string, } | { "type": "reasoning_delta", text: string, } | { "type": "retrying", attempt: number, delay_ms: number, reason: string, } | { "type": "turn_finished", stop_reason: StopReason, usage: Usage, detail?: string, } | { "type": "tool_call_started", call_id: string, name: string, input: JsonValue, } | { "type": "tool_call_update", call_id: string, output: string, } | { "type": "tool_call_finished", call_id: string, name: string, content: string, is_error: boolean, } | { "type": "message_queued", text: string, } | { "type": "queue_consumed", count: number, } | { "type": "compacted", summarized_messages: number, tokens_before: number, tokens_after: number, } | { "type": "sessions_changed", sessions: Array<SessionSummary>, } | { "type": "history_results", query: string, hits: Array<HistoryHit>, } | { "type": "approval_requested", approval_id: string, kind: ApprovalKind, 
/**
 * The command, or the path for file access.
 */
command: string, 
/**
 * What "always" would remember (e.g. `cargo build`); empty when "always" is not
 * offered (a compound line, a shell or interpreter, a command with `env`).
 */
prefix: string, cwd?: string, 
/**
 * The command would run outside the sandbox (the agent asked to, or bubblewrap is
 * not available): asked each time, never remembered.
 */
outside_sandbox: boolean, 
/**
 * The variables the agent sets for the command, as `NAME=value` (control and
 * invisible characters escaped): part of what runs, so part of what is approved.
 */
env: Array<string>, 
/**
 * The simple commands the line runs, each marked covered or not (by a rule or the
 * read-only list); empty when the line could not be read into simple commands.
 */
parts: Array<CommandPart>, 
/**
 * Why the line cannot be proven harmless (`it uses a command substitution`…).
 */
unprovable?: string, 
/**
 * For a command: whether it starts in the background and when it is stopped, so the
 * user knows how long what they approve may run. Absent for file access and input.
 */
exec_run?: ExecRun, 
/**
 * For an MCP call: the server, the tool and the arguments.
 */
mcp?: McpCallCard, 
/**
 * An unattended run asks (a continuation, a routine, a woken heartbeat): unanswered
 * by this time (ms since the epoch), the request is denied and the run goes on.
 */
expires_at?: number, } | { "type": "approval_resolved", approval_id: string, decision: ApprovalDecision, 
/**
 * Asked by a run nobody watches and never answered: its `expires_at` passed, or the
 * run that asked ended first (its deadline, a timeout, shutdown). `decision` is then
 * `deny`; the card says it expired rather than that someone denied it.
 */
expired?: boolean, } | { "type": "error", kind: ErrorKind, message: string, } | { "type": "notification", kind: NotificationKind, title: string, body: string, event_id?: string, process_id?: string, 
/**
 * An approval an unattended run waits for: the notification offers Allow once,
 * Deny and Open, and an answer goes back as `Op::Approval` with this id.
 */
approval_id?: string, 
/**
 * The conversation (and its message, by timestamp) a click opens; not
 * `session_id`, which is the envelope's: the session the event came from.
 */
target_session_id?: string, message_ts?: number, } | { "type": "heartbeat", reason: WakeReason, status: HeartbeatStatus, skip_reason?: HeartbeatSkip, 
/**
 * What went wrong, for a `failed` run or a problem the user should fix.
 */
detail?: string, 
/**
 * The run will be tried again (a busy conversation, a taken lock, a provider error
 * with tries left): this is not its final word.
 */
retrying?: boolean, 
/**
 * The tokens the run's model call used (absent when nothing was asked of the model).
 */
usage?: Usage, } | { "type": "background_update", update: BackgroundUpdate, unread: number, } | { "type": "background_updates_read", event_ids: Array<string>, } | { "type": "background_paused", paused: boolean, } | { "type": "message_appended", message: Message, } | { "type": "process_started", process: ProcessSummary, } | { "type": "process_output", process_id: string, data_b64: string, } | { "type": "process_exited", process: ProcessSummary, } | { "type": "routines_changed", routines: RoutinesView, } | { "type": "health", health: HealthView, } | { "type": "mcp_servers_changed", mcp: McpView, } | { "type": "while_away", summary: AwaySummary, } | { "type": "channels_changed", channels: ChannelsView, });

export type Event = { "type": "turn_started", user_text: string, } | { "type": "text_delta", text: string, } | { "type": "reasoning_delta", text: string, } | { "type": "retrying", attempt: number, delay_ms: number, reason: string, } | { "type": "turn_finished", stop_reason: StopReason, usage: Usage, detail?: string, } | { "type": "tool_call_started", call_id: string, name: string, input: JsonValue, } | { "type": "tool_call_update", call_id: string, output: string, } | { "type": "tool_call_finished", call_id: string, name: string, content: string, is_error: boolean, } | { "type": "message_queued", text: string, } | { "type": "queue_consumed", count: number, } | { "type": "compacted", summarized_messages: number, tokens_before: number, tokens_after: number, } | { "type": "sessions_changed", sessions: Array<SessionSummary>, } | { "type": "history_results", query: string, hits: Array<HistoryHit>, } | { "type": "approval_requested", approval_id: string, kind: ApprovalKind, 
/**
 * The command, or the path for file access.
 */
command: string, 
/**
 * What "always" would remember (e.g. `cargo build`); empty when "always" is not
 * offered (a compound line, a shell or interpreter, a command with `env`).
 */
prefix: string, cwd?: string, 
/**
 * The command would run outside the sandbox (the agent asked to, or bubblewrap is
 * not available): asked each time, never remembered.
 */
outside_sandbox: boolean, 
/**
 * The variables the agent sets for the command, as `NAME=value` (control and
 * invisible characters escaped): part of what runs, so part of what is approved.
 */
env: Array<string>, 
/**
 * The simple commands the line runs, each marked covered or not (by a rule or the
 * read-only list); empty when the line could not be read into simple commands.
 */
parts: Array<CommandPart>, 
/**
 * Why the line cannot be proven harmless (`it uses a command substitution`…).
 */
unprovable?: string, 
/**
 * For a command: whether it starts in the background and when it is stopped, so the
 * user knows how long what they approve may run. Absent for file access and input.
 */
exec_run?: ExecRun, 
/**
 * For an MCP call: the server, the tool and the arguments.
 */
mcp?: McpCallCard, 
/**
 * An unattended run asks (a continuation, a routine, a woken heartbeat): unanswered
 * by this time (ms since the epoch), the request is denied and the run goes on.
 */
expires_at?: number, } | { "type": "approval_resolved", approval_id: string, decision: ApprovalDecision, 
/**
 * Asked by a run nobody watches and never answered: its `expires_at` passed, or the
 * run that asked ended first (its deadline, a timeout, shutdown). `decision` is then
 * `deny`; the card says it expired rather than that someone denied it.
 */
expired?: boolean, } | { "type": "error", kind: ErrorKind, message: string, } | { "type": "notification", kind: NotificationKind, title: string, body: string, event_id?: string, process_id?: string, 
/**
 * An approval an unattended run waits for: the notification offers Allow once,
 * Deny and Open, and an answer goes back as `Op::Approval` with this id.
 */
approval_id?: string, 
/**
 * The conversation (and its message, by timestamp) a click opens; not
 * `session_id`, which is the envelope's: the session the event came from.
 */
target_session_id?: string, message_ts?: number, } | { "type": "heartbeat", reason: WakeReason, status: HeartbeatStatus, skip_reason?: HeartbeatSkip, 
/**
 * What went wrong, for a `failed` run or a problem the user should fix.
 */
detail?: string, 
/**
 * The run will be tried again (a busy conversation, a taken lock, a provider error
 * with tries left): this is not its final word.
 */
retrying?: boolean, 
/**
 * The tokens the run's model call used (absent when nothing was asked of the model).
 */
usage?: Usage, } | { "type": "background_update", update: BackgroundUpdate, unread: number, } | { "type": "background_updates_read", event_ids: Array<string>, } | { "type": "background_paused", paused: boolean, } | { "type": "message_appended", message: Message, } | { "type": "process_started", process: ProcessSummary, } | { "type": "process_output", process_id: string, data_b64: string, } | { "type": "process_exited", process: ProcessSummary, } | { "type": "routines_changed", routines: RoutinesView, } | { "type": "health", health: HealthView, } | { "type": "mcp_servers_changed", mcp: McpView, } | { "type": "while_away", summary: AwaySummary, } | { "type": "channels_changed", channels: ChannelsView, };

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal" | "cancelled" | "policy" | "error";

export type Usage = { 
/**
 * Every input token, the cached ones included.
 */
input_tokens: number, output_tokens: number, 
/**
 * Of `input_tokens`, read from the provider's prompt cache (cheaper).
 */
cache_read_tokens?: number, 
/**
 * Of `input_tokens`, written to the provider's prompt cache (dearer, once).
 */
cache_write_tokens?: number, 
/**
 * What the provider says the call cost, in millionths of a US dollar (OpenRouter's
 * `usage.cost`); 0 when it says nothing.
 */
cost_micro_usd?: number, };

export type ErrorKind = "auth" | "model_not_found" | "bad_request" | "rate_limited" | "server" | "network" | "timeout" | "stream" | "config" | "storage" | "invalid_op" | "attachment" | "session" | "desktop" | "internal";

export type Role = "user" | "assistant" | "tool_result";

export type Message = { role: Role, content: Array<ContentBlock>, 
/**
 * Milliseconds since the Unix epoch.
 */
ts: number, model?: string, usage?: Usage, stop_reason?: StopReason, 
/**
 * What the message is beyond its role (a steer, a summary); plain messages omit it.
 */
kind?: MessageKind, };

export type ContentBlock = { "type": "text", text: string, } | { "type": "thinking", thinking: string, signature?: string, } | { "type": "tool_use", id: string, name: string, input: JsonValue, } | { "type": "tool_result", tool_use_id: string, content: string, is_error: boolean, } | { "type": "context", text: string, } | { "type": "image", 
/**
 * Lowercase hex SHA-256 of the stored bytes.
 */
sha256: string, 
/**
 * `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
 */
mime: string, };

export type MessageKind = { "type": "plain" } | { "type": "interrupt" } | { "type": "summary", replaces_before: number, } | { "type": "system_event" };

export type ApprovalDecision = "approve" | "always" | "deny";

export type ApprovalKind = "exec" | "read_outside" | "write_outside" | "process_input" | "mcp_call" | "steer_file";

export type CommandPart = { 
/**
 * Its words joined by spaces, invisible characters escaped.
 */
text: string, 
/**
 * Already allowed: a remembered rule or the built-in read-only list covers it.
 */
covered: boolean, };

export type ExecRun = { 
/**
 * Started in the background (`background: true`): the turn goes on while it runs.
 */
background: boolean, 
/**
 * It is killed, with everything it started, after this many milliseconds; `null`: it
 * runs until it ends or is killed.
 */
timeout_ms: number | null, };

export type ApprovalPolicy = "ask" | "allowlist" | "full-auto" | "read-only";

export type ApprovalRule = { kind: ApprovalKind, 
/**
 * `cargo build` for commands; a folder for file access.
 */
prefix: string, created_at: number, 
/**
 * For a command: the folder it applies in (and below), where it was given: the
 * workspace, or the command's own folder outside it. Absent in rules saved before
 * folders were recorded, which apply in the workspace.
 */
folder?: string, };

export type SandboxView = { 
/**
 * bubblewrap is installed and can start here.
 */
available: boolean, 
/**
 * Why not, when it is not: unattended commands are refused then, and the user's own
 * turns ask before each command.
 */
problem?: string, 
/**
 * The user's own turns' commands may use the network.
 */
network: boolean, 
/**
 * Commands of runs nobody watches (heartbeat, routine jobs, continuations) may use the
 * network. Off by default.
 */
unattended_network: boolean, 
/**
 * slirp4netns is installed: without it no command gets a network, whatever the switches
 * say.
 */
network_available: boolean, 
/**
 * Why commands get no network here, when they do not.
 */
network_problem?: string, 
/**
 * Paths every sandbox shows empty (`~` is the home): `~/.ssh`, `~/.aws`, … An empty list
 * hides nothing.
 */
hidden: Array<string>, 
/**
 * The list "Restore defaults" puts back.
 */
default_hidden: Array<string>, 
/**
 * Routines (by id) whose jobs may use the network while runs nobody watches may not.
 */
network_routines: Array<string>, 
/**
 * Unix sockets the user's own turns' commands may connect to (never runs nobody
 * watches).
 */
sockets: Array<string>, 
/**
 * Folders writable besides the workspace (added by the user in Settings).
 */
writable: Array<string>, };

export type ApprovalsView = { policy: ApprovalPolicy, 
/**
 * True when `VIGIL_APPROVAL_POLICY` fixes the policy (the UI shows it read-only).
 */
policy_from_env: boolean, rules: Array<ApprovalRule>, sandbox: SandboxView, };

export type SessionSummary = { id: string, title: string, created_at: number, updated_at: number, 
/**
 * Turns Vigil ran on its own here since the user's last message.
 */
continuations: number, 
/**
 * This conversation's own limit on continuations in a row (`0`: never continues on its
 * own); absent, the global setting applies.
 */
continuation_limit?: number, };

export type ProcessSummary = { 
/**
 * 8 hex characters.
 */
id: string, 
/**
 * The session that owns it (`user` for commands started from the panel).
 */
owner: string, command: string, cwd: string, pid: number | null, 
/**
 * `running`, `exited`, `killed` or `failed`.
 */
state: string, started_at: number, ended_at: number | null, exit_code: number | null, signal: string | null, 
/**
 * Running in the background (its exit is announced).
 */
background: boolean, 
/**
 * Whether it has a terminal (else plain pipes).
 */
pty: boolean, };

export type SavedMessage = { id: string, role: Role, content: Array<ContentBlock>, 
/**
 * Milliseconds since the Unix epoch.
 */
ts: number, model?: string, usage?: Usage, stop_reason?: StopReason, 
/**
 * What the message is beyond its role (a steer, a summary); plain messages omit it.
 */
kind?: MessageKind, };

export type History = { session_id: string, messages: Array<SavedMessage>, 
/**
 * Lines that could not be loaded (they stay on disk), for a banner.
 */
warnings: Array<string>, };

export type CommandError = { 
/**
 * Stable, machine-readable: `invalid_settings`, `storage`, `secrets`, `not_ready`.
 */
code: string, 
/**
 * For the user.
 */
message: string, 
/**
 * The form field the error is about (`schedule`, `timezone`, `title`…), so a form can
 * show it at that field; absent for errors about the whole request.
 */
field?: string, };

export type ProviderKind = "anthropic" | "openai";

export type ProviderSettings = { kind: ProviderKind, 
/**
 * As the official SDKs take it: `https://api.anthropic.com` (the client adds
 * `/v1/messages`) or `https://api.openai.com/v1` (the client adds `/chat/completions`).
 */
base_url: string, model: string, 
/**
 * Upper bound on the reply length, in tokens.
 */
max_tokens: number, 
/**
 * The model's context window in tokens; empty means the kind's usual size
 * ([`ProviderKind::default_context_window`]). Set it for small local models.
 */
context_window?: number, };

export type KeyStorage = "keyring" | "file" | "environment" | "none";

export type SettingsView = { provider: ProviderSettings, api_key_set: boolean, key_storage: KeyStorage, 
/**
 * Fields overridden by `VIGIL_*` environment variables; the UI shows them read-only.
 */
env_overrides: Array<string>, 
/**
 * Things the user should know (no keyring service, a settings file that was unreadable…).
 */
warnings: Array<string>, };

export type ConnectionVerdict = { ok: boolean, message: string, };

export type WakeReason = "interval" | "exec-event" | "cron" | "wake" | "hook" | "manual" | "retry" | "reflection";

export type HeartbeatStatus = "ok-token" | "ok-empty" | "sent" | "skipped" | "failed" | "timed-out";

export type HeartbeatSkip = "disabled" | "quiet-hours" | "requests-in-flight" | "empty-heartbeat-file" | "heartbeat-file-error" | "duplicate" | "no-provider" | "paused" | "lock" | "budget";

export type BackgroundUpdate = { event_id: string, 
/**
 * `heartbeat_result`, `exec_completed`, `job_completed`, …
 */
event_type: string, 
/**
 * The session that produced it (`heartbeat_session_main`, `job_…`).
 */
source: string, 
/**
 * One sentence, always shown.
 */
summary: string, detail?: string, 
/**
 * 0 info, 1 important, 2 urgent.
 */
priority: number, created_at: number, };

export type ActiveHours = { start: string, end: string, timezone?: string, };

export type HeartbeatSettings = { 
/**
 * Off switches every run, event-driven ones included.
 */
enabled: boolean, 
/**
 * The interval: `30m`, `1h30m`, `45s`; a bare number is minutes; `0` or an invalid
 * value turns interval runs off (event-driven runs still happen).
 */
every: string, 
/**
 * Replaces the built-in heartbeat prompt.
 */
prompt?: string, 
/**
 * How much text may accompany `HEARTBEAT_OK` and still count as "nothing to tell".
 */
ackMaxChars: number, activeHours?: ActiveHours, 
/**
 * A model for heartbeat runs instead of the conversation's.
 */
model?: string, 
/**
 * Raise a native notification when a heartbeat has something to tell.
 */
notifications: boolean, 
/**
 * Tokens (input + output) background work (heartbeat runs, routine jobs, continuations)
 * may use per local day; `0` (the default) is no budget.
 */
dailyTokenBudget: number, 
/**
 * After this many hours with no user message, each quiet interval run doubles the
 * interval, up to 8×; the next user message, or an interval run that told the user
 * something, brings it back. It trades vigilance for cost while nobody watches; `0` turns
 * the idle gate off.
 */
idleAfterHours: number, 
/**
 * How often, in hours, Vigil reads what the user wrote lately and looks for routines
 * they asked for and never got (seed 003 §8.3); `0` turns reflection off.
 */
reflectionEveryHours: number, 
/**
 * What reflection finds becomes a routine at once; off (the default), it is a
 * suggestion the user turns on under Routines.
 */
reflectionAddsRoutines: boolean, 
/**
 * The longest a heartbeat run may take, in minutes (1–1440, default 10): a run still
 * going then is ended and recorded `timed-out`, so one hung run (a long command, an
 * unanswered question) cannot hold back the polls and reminders after it.
 */
runTimeoutMinutes: number, };

export type HeartbeatStats = { 
/**
 * Runs that called the model.
 */
runs: number, sent: number, 
/**
 * `ok-token` and `ok-empty` runs.
 */
suppressed: number, failed: number, 
/**
 * Skips by reason (`requests-in-flight`, `quiet-hours`, …).
 */
skipped: Record<string, number>, 
/**
 * Every `request_wake`.
 */
wakes_requested: number, 
/**
 * Requests merged into a wake already waiting for the same target.
 */
wakes_coalesced: number, };

export type HeartbeatView = { settings: HeartbeatSettings, 
/**
 * The interval in force; `None` when interval runs are off.
 */
interval_ms: number | null, last_run_at: number | null, last_reason: WakeReason | null, last_status: HeartbeatStatus | null, last_skip_reason: HeartbeatSkip | null, last_detail: string | null, 
/**
 * The tokens the last run's model turn used; `None` when it called no model (a skip).
 */
last_usage: Usage | null, next_run_at: number | null, 
/**
 * Settings problems (an unknown time zone, a bad interval…), for the status view.
 */
warnings: Array<string>, stats: HeartbeatStats, 
/**
 * Background activity is paused: every run is skipped (`paused`) until resumed.
 */
paused: boolean, 
/**
 * Tokens background work (heartbeat runs, routine jobs, continuations) used today
 * (local date).
 */
usage_today: Usage, 
/**
 * Background model runs today.
 */
runs_today: number, 
/**
 * Today's budget (`dailyTokenBudget`) is spent: background model calls wait for
 * tomorrow or a higher budget.
 */
budget_spent: boolean, 
/**
 * The idle gate: how many times the interval is stretched now (1 = normal, up to 8).
 */
idle_factor: number, };

export type ExecutionMode = "inline" | "isolated";

export type WakeMode = "now" | "next_heartbeat";

export type CatchUp = "once" | "skip" | "all";

export type RoutineState = "pending" | "running" | "done" | "failed";

export type RoutineSource = "manual" | "chat" | "heartbeat_reflect";

export type ParseStatus = "ok" | "corrupted" | "empty";

export type RoutineView = { id: string, title: string, description: string, 
/**
 * A cron expression (5 fields) or an interval (`30m`, `2h`, `1d`); `None` for one-shots.
 */
schedule: string | null, 
/**
 * The IANA zone the schedule is read in.
 */
timezone: string, execution_mode: ExecutionMode, wake_mode: WakeMode, source: RoutineSource, enabled: boolean, state: RoutineState, last_run_at: number | null, next_run_at: number | null, timeout_seconds: number, retry: number, max_retry: number, error_message: string | null, created_at: number, 
/**
 * A deterministic kind (`time_reminder`) that runs without the model.
 */
kind: string | null, 
/**
 * "every weekday at 09:00, Europe/Berlin".
 */
schedule_description: string, 
/**
 * The next three run times.
 */
next_runs: Array<number>, 
/**
 * Why this routine cannot run as written (a bad cron expression or zone in the file).
 */
problem: string | null, 
/**
 * The latest run, for the list's "how the last run went"; the whole history is asked
 * for when the user unfolds it.
 */
last_run: RoutineRun | null, 
/**
 * Removed (not for good): it never runs, and can be restored until it is deleted.
 */
removed_at: number | null, 
/**
 * What happens to due times missed while Vigil could not run it.
 */
catch_up: CatchUp, 
/**
 * A run whose outcome is `unknown` (cut off after it changed something) waits for the
 * user: Retry or Dismiss in its history. The run's id.
 */
unknown_run: string | null, 
/**
 * Vigil's daily reflection suggested it: off until the user turns it on.
 */
suggested: boolean, 
/**
 * Its trigger, check and action, when it has more than a schedule.
 */
trigger?: Trigger, check?: Check, action?: Action, 
/**
 * How its trigger and check are doing (fires today, last evidence, approval).
 */
watch?: WatchStatus, 
/**
 * For a routine whose fires run inline (`agent`, `execution_mode: inline`, a trigger):
 * the title of the conversation its turns run in ("in: …" on its row), or why they
 * run as jobs instead (that conversation was deleted).
 */
runs_in?: string, };

export type RoutinesView = { status: ParseStatus, 
/**
 * For `corrupted`: what is wrong and where, for the user.
 */
error: string | null, routines: Array<RoutineView>, 
/**
 * Set while `HEARTBEAT.md` waits for the user's Trust (another program replaced it
 * while a sandboxed command was running, which could then write it): why, for the
 * user. None of its routines run meanwhile; `routines` lists them for review.
 */
held?: string, };

export type RoutineDraft = { title?: string, description?: string, 
/**
 * Cron (5 fields) or interval; an empty string makes the routine a one-shot.
 */
schedule?: string, 
/**
 * For a one-shot: when it runs (ms since the epoch).
 */
next_run_at?: number, timezone?: string, execution_mode?: ExecutionMode, wake_mode?: WakeMode, timeout_seconds?: number, max_retry?: number, enabled?: boolean, kind?: string, catch_up?: CatchUp, 
/**
 * What wakes it besides its schedule (`{"kind": "file", "paths": [...]}`, …);
 * `{"kind": "schedule"}` goes back to the schedule.
 */
trigger?: Trigger, 
/**
 * A command in the read-only sandbox and its condition; an empty command removes it.
 */
check?: Check, action?: Action, 
/**
 * On create: the conversation that made it (the one the user had open in the editor);
 * its inline runs are turns there. Absent: the main conversation. Ignored on update.
 */
conversation_id?: string, 
/**
 * Create even if a routine with the same title or task exists.
 */
allow_duplicate?: boolean, };

export type RunOutcome = "ok" | "acknowledged" | "failed" | "timed_out" | "interrupted" | "skipped" | "missed" | "unknown";

export type RoutineRun = { run_id: string, routine_id: string, mode: ExecutionMode, 
/**
 * The slot this run was for.
 */
due_at: number | null, started_at: number, finished_at: number, outcome: RunOutcome, 
/**
 * The job session (`job_<routine>_<run>`) or the heartbeat session: the run's transcript, which
 * the pane opens. A history read leaves it out once that transcript is deleted.
 */
session_id: string | null, summary: string | null, error: string | null, 
/**
 * The model was not called (a deterministic task).
 */
deterministic: boolean, 
/**
 * How many due times this record stands for: several for a `missed` or `skipped`
 * record of due times in a row, or a `catch_up: all` run told about them; `due_at` is
 * the first and `last_due_at` the last.
 */
due_count: number, last_due_at?: number, 
/**
 * For `unknown`: the first thing the run did that changes something ("exec: make
 * deploy"), recorded before it started.
 */
side_effect?: string, 
/**
 * The tokens (and, where the provider says, the cost) of the model turn it ran in: its
 * job's turn, or for an inline routine the whole heartbeat run that carried it (shared
 * with any routine due in the same run). `None` when no model ran.
 */
usage?: Usage, 
/**
 * What a trigger or check saw that started (or would have started) this run: the
 * changed paths and their diff, the matched output lines, the check's output, the
 * webhook body (bounded; data, never instructions).
 */
evidence?: string, };

export type SchedulePreview = { description: string, timezone: string, next_runs: Array<number>, };

export type RoutineSaved = { routine: RoutineView, warnings: Array<string>, };

export type Trigger = { "kind": "schedule" } | { "kind": "file", paths: Array<string>, 
/**
 * Changes closer together than this are one fire (default 300 ms).
 */
debounce_ms?: number, } | { "kind": "output", process: string, pattern: string, } | { "kind": "url", url: string, every?: string, 
/**
 * What counts as a change: the status (default) or the body's hash.
 */
when?: UrlWhen, 
/**
 * Fires when the response takes longer than this.
 */
slower_than_ms?: bigint, } | { "kind": "webhook" };

export type UrlWhen = "status" | "content";

export type Check = { command: string, 
/**
 * `nonzero` (the default: exit code ≠ 0), a comparison of the first number in the
 * output (`> 80`, `>= 1`, `< 10`, `<= 5`, `== 0`, `!= 0`), or `changed` (output
 * differs from the last check's).
 */
when: string, };

export type Action = "agent" | "notify";

export type WatchStatus = { 
/**
 * "Watching `logs/`", "Checking every 5 minutes".
 */
summary: string, 
/**
 * The check or URL is approved as written (a routine whose text changed since waits).
 */
approved: boolean, 
/**
 * What approval would allow, for the card: the command, how often, with what access.
 */
approval_text: string | null, 
/**
 * Fires since local midnight.
 */
fired_today: number, last_fired_at: number | null, 
/**
 * The last fire's evidence, one line.
 */
last_evidence: string | null, 
/**
 * Paused by the rate limit: why.
 */
paused: string | null, };

export type HeartbeatChecks = { text: string, 
/**
 * Whether the file exists (Vigil writes a comment-only template once, on the first
 * start; a file the user deleted stays deleted).
 */
exists: boolean, 
/**
 * No file, or one with only blank lines, headings, empty list items and comments
 * outside the routines: interval heartbeats skip the model call (seed 002 §6).
 */
effectively_empty: boolean, 
/**
 * The file, for the user to find it.
 */
path: string, };

export type Theme = "system" | "light" | "dark";

export type NotificationKind = "process" | "routine" | "monitor" | "heartbeat" | "approval" | "budget" | "other";

export type NotificationKinds = { processes: boolean, routines: boolean, 
/**
 * A monitor fired ([`NotificationKind::Monitor`]); absent in settings saved before it
 * existed: on, like the rest.
 */
monitors: boolean, heartbeat: boolean, approvals: boolean, };

export type DesktopSettings = { 
/**
 * Closing the window hides it to the tray and background work goes on; off, closing
 * the window quits (asking first when processes run).
 */
close_to_tray: boolean, 
/**
 * Start Vigil (hidden, in the tray) when the user logs in.
 */
start_at_login: boolean, theme: Theme, 
/**
 * Which kinds of native notification to raise (the cards in the chat are kept either way).
 */
notifications: NotificationKinds, 
/**
 * The agent's workspace folder (its files, `HEARTBEAT.md`, the routines); `None` is
 * `<data dir>/workspace`. Read when Vigil starts.
 */
workspace: string | null, 
/**
 * How many turns in a row a conversation may run on its own (a background command it
 * started ended) without a message from the user; `0`: never.
 */
continuation_limit: number, 
/**
 * How long an unattended run (a continuation, a routine, a woken heartbeat) waits for an
 * approval before it is denied, in seconds.
 */
approval_timeout_secs: number, 
/**
 * Keep the computer from sleeping while a turn, a routine or a background command runs.
 */
keep_awake: boolean, 
/**
 * After an absence at least this long (idle or locked, by the desktop session), the
 * window shows what happened meanwhile in one "While you were away" card.
 */
away_after_minutes: number, 
/**
 * Keep heartbeat runs out of the agent's `search_history` (the user's search still
 * finds them).
 */
search_skips_heartbeats?: boolean, 
/**
 * The address webhook routines are called on beyond loopback (`0.0.0.0`: every
 * interface; one of this machine's addresses: that one). Absent: loopback only, the
 * default. Anyone who can reach that address can try the routines' secret URLs.
 */
webhook_bind?: string, };

export type DesktopSettingsView = { settings: DesktopSettings, 
/**
 * A hand-edited entry with a wrong type, a login item that could not be written…
 */
warnings: Array<string>, 
/**
 * The workspace folder this run uses (the chosen one applies from the next start; a
 * missing one falls back to the default). Empty where no runtime answers.
 */
workspace_in_use: string, 
/**
 * Why the computer cannot be kept awake while Vigil works (no systemd-logind on the
 * system bus…); absent when it can, or when keeping awake is off.
 */
keep_awake_problem?: string, };

export type HealthStatus = "healthy" | "shutting_down";

export type LaneHealth = { session_id: string, 
/**
 * `primary`, `heartbeat` or `job`.
 */
scope: Scope, 
/**
 * Messages sent meanwhile, waiting to steer the running turn.
 */
queued: number, };

export type LockHealth = { 
/**
 * Locks held right now.
 */
held: number, acquired: number, 
/**
 * Acquisitions that found the lock taken and had to wait.
 */
waited: number, 
/**
 * The time those waits took, in all and the longest.
 */
wait_ms_total: number, wait_ms_max: number, 
/**
 * Waits that gave up (the caller got "session is locked").
 */
timeouts: number, 
/**
 * Locks taken back from a holder that had died or held on too long.
 */
reclaimed: number, };

export type HeartbeatHealth = { 
/**
 * The wake loop runs with the heartbeat registered to handle its wakes.
 */
handler_registered: boolean, 
/**
 * A heartbeat turn is running now.
 */
running: boolean, 
/**
 * Wakes waiting to run (coalesced, or queued for a retry): one per agent at most.
 */
pending_wakes: number, 
/**
 * Wake requests no finished run has served yet, merged ones included: the backlog the
 * "falling behind" alert counts.
 */
requests_waiting: number, 
/**
 * Wake requests since start by reason (`interval`, `exec-event`, `cron`, `manual`, …).
 */
wakes_by_reason: Record<string, number>, 
/**
 * Runs tried again because a conversation was busy or the lock was taken.
 */
retried_busy: number, 
/**
 * Runs tried again after a provider error.
 */
retried_failed: number, 
/**
 * Runs skipped because the heartbeat's lock was taken.
 */
skipped_lock: number, 
/**
 * Heartbeat turns (model runs) since start and how long they took.
 */
run_count: number, run_ms_total: number, run_ms_max: number, run_ms_last: number, delivered: number, suppressed: number, 
/**
 * Runs put off because a turn was running in a conversation.
 */
skipped_busy: number, 
/**
 * Tokens background work (heartbeat runs, routine jobs, continuations) used today
 * (local date), and in how many model runs.
 */
usage_today: Usage, runs_today: number, 
/**
 * The daily token budget for background work (`0`: none) and whether it is spent.
 */
daily_token_budget: number, budget_spent: boolean, 
/**
 * The idle gate's stretch of the interval now (1 = normal, up to 8).
 */
idle_factor: number, };

export type MailboxHealth = { 
/**
 * Updates waiting in the primary conversation's mailbox now.
 */
waiting: number, deposited: number, 
/**
 * Updates acknowledged after a turn took them in.
 */
drained: number, };

export type RoutinesHealth = { 
/**
 * Enabled routines with a next run.
 */
scheduled: number, 
/**
 * Runs in flight (isolated jobs, deterministic runs, inline runs waiting for a heartbeat).
 */
running: number, job_sessions_created: number, };

export type ChannelsHealth = { 
/**
 * Only the channels that are configured; none: the phone is not used.
 */
channels: Array<ChannelView>, refused_answers: number, ignored_chats: number, };

export type HealthView = { status: HealthStatus, started_at: number, uptime_ms: number, 
/**
 * Background work (heartbeat, routines, processes) is paused by the user.
 */
paused: boolean, 
/**
 * Sessions with a turn running.
 */
lanes: Array<LaneHealth>, locks: LockHealth, heartbeat: HeartbeatHealth, mailbox: MailboxHealth, routines: RoutinesHealth, 
/**
 * Processes started by the agent or the user that are still running.
 */
processes_running: number, 
/**
 * The phone channels.
 */
channels: ChannelsHealth, 
/**
 * What needs a look, in words (seed 004 §7.3 practice 3's alert rules: a wake backlog,
 * a deep queue, many locks held; and any lock wait that gave up or was reclaimed).
 */
alerts: Array<string>, };

export type McpTransport = "stdio" | "http";

export type McpServerState = { "state": "starting" } | { "state": "running" } | { "state": "failed", error: string, retry_at?: number, } | { "state": "disabled" };

export type McpToolView = { 
/**
 * The server's own name for it.
 */
name: string, 
/**
 * The name the model calls: `mcp__<server>__<tool>`.
 */
qualified_name: string, description: string, 
/**
 * The server says it only reads (`readOnlyHint: true`): the read-only policy allows it.
 */
read_only: boolean, };

export type McpServerView = { 
/**
 * Its key in `mcpServers`.
 */
name: string, transport: McpTransport, 
/**
 * The command line (stdio) or the URL (HTTP), as configured.
 */
target: string, state: McpServerState, 
/**
 * Empty unless it runs.
 */
tools: Array<McpToolView>, 
/**
 * Its calls run without asking under `ask` and `allowlist` (never under `read-only`).
 */
trusted: boolean, 
/**
 * How long one call may take before it is cancelled.
 */
timeout_secs: number, 
/**
 * The last lines the server wrote to stderr (stdio servers), oldest first; every line
 * also goes to Vigil's log.
 */
stderr_tail: Array<string>, 
/**
 * The environment variables and headers whose values are kept in the keyring.
 */
secrets: Array<string>, };

export type McpView = { 
/**
 * Sorted by name.
 */
servers: Array<McpServerView>, 
/**
 * A problem with `mcp.json` as a whole (unreadable, kept aside), for a banner.
 */
problem?: string, 
/**
 * Where the file is, so the user can edit it by hand.
 */
path: string, };

export type McpField = "env" | "header";

export type McpSecretField = { server: string, field: McpField, 
/**
 * The variable's or header's name.
 */
name: string, };

export type McpCallCard = { server: string, 
/**
 * The server's own name for the tool.
 */
tool: string, 
/**
 * The arguments, as indented JSON (control and invisible characters escaped).
 */
arguments: string, 
/**
 * The server says the tool only reads (a hint: servers can be wrong).
 */
read_only: boolean, };

export type AwaySummary = { 
/**
 * When the desktop session went idle or locked (ms since the epoch).
 */
away_since: number, back_at: number, 
/**
 * In the card's order: what ran, what failed or is unknown, what waits for the user,
 * what was missed; within each, the latest first.
 */
lines: Array<AwayLine>, };

export type AwayLine = { kind: AwayKind, 
/**
 * What it is about: a routine's or a conversation's title, or "Heartbeat".
 */
title: string, 
/**
 * What happened, as a clause: "ran 3 times", "failed: connection refused".
 */
text: string, 
/**
 * When it last happened (ms since the epoch).
 */
at: number, target: AwayTarget, };

export type AwayKind = "ran" | "failed" | "unknown" | "waiting" | "missed";

export type AwayTarget = { "type": "conversation", session_id: string, message_ts?: number, approval_id?: string, } | { "type": "routine", routine_id: string, };

export type HistoryHit = { 
/**
 * The conversation (or job / heartbeat session) it is in.
 */
session_id: string, 
/**
 * The session's title now; empty if it has none.
 */
title: string, 
/**
 * `conversation`, `job` or `heartbeat`.
 */
kind: string, 
/**
 * The message's stable id: where the window opens the conversation, at the loaded
 * message with this [`crate::SavedMessage::id`].
 */
message_id: string, 
/**
 * `user`, `assistant`, `tool_result` or `event`.
 */
role: string, ts: number, 
/**
 * Words around the match, in order; the matched words are parts of their own.
 */
snippet: Array<SnippetPart>, };

export type SnippetPart = { text: string, matched: boolean, };

export type ChannelWhen = "away" | "always" | "never";

export type ChannelKinds = { 
/**
 * An approval waiting.
 */
approval?: ChannelWhen, 
/**
 * A conversation's answer given on its own (a continuation), a background command's end.
 */
continuation?: ChannelWhen, 
/**
 * A routine's result (a run its schedule or the user started).
 */
routine?: ChannelWhen, 
/**
 * A monitor fired (a routine a watch trigger ran), or the heartbeat found something.
 */
monitor?: ChannelWhen, 
/**
 * A failure, or anything else.
 */
failure?: ChannelWhen, 
/**
 * The daily budget is spent.
 */
budget?: ChannelWhen, };

export type NtfySettings = { 
/**
 * `https://ntfy.example.org`
 */
server: string, 
/**
 * The topic pushes go to; absent: Vigil generates one (128 random bits) and keeps it.
 */
topic?: string, 
/**
 * The topic answers come back on; absent: generated like `topic`.
 */
reply_topic?: string, };

export type TelegramSettings = { api_base: string, 
/**
 * The paired chat; absent: pair by code in Settings → Away.
 */
chat_id?: number, 
/**
 * The conversation messages to the bot go to; absent: the main one.
 */
session_id?: string, };

export type ChannelsSettings = { ntfy?: NtfySettings, telegram?: TelegramSettings, when: ChannelWhen, kinds: ChannelKinds, };

export type ChannelName = "ntfy" | "telegram";

export type ChannelOp = { "action": "get" } | { "action": "set", settings: ChannelsSettings, } | { "action": "set_token", channel: ChannelName, token: string, } | { "action": "pair" } | { "action": "unpair" };

export type ChannelStatus = "off" | "needs_setup" | "connecting" | "connected" | "retrying";

export type ChannelView = { channel: ChannelName, status: ChannelStatus, 
/**
 * A token is stored (keyring or environment).
 */
has_token: boolean, 
/**
 * Pushes waiting to go out.
 */
queued: number, sent: number, 
/**
 * The last error, with any URL and token removed.
 */
last_error?: string, 
/**
 * Approvals can be answered from this channel (ntfy: only when its topics refuse
 * anonymous readers).
 */
answers: boolean, 
/**
 * What this channel sends, in one sentence.
 */
sends: string, };

export type PairingView = { code: string, expires_at: number, tries_left: number, };

export type ChannelsView = { settings: ChannelsSettings, channels: Array<ChannelView>, pairing?: PairingView, paired_chat?: number, 
/**
 * The ntfy topics in use (named, or generated): the phone subscribes to `ntfy_topic`.
 */
ntfy_topic?: string, ntfy_reply_topic?: string, 
/**
 * Whether presence can be read; when not, "when away" means always.
 */
presence_known: boolean, 
/**
 * Answers refused: a forged, replayed or expired token, a wrong pairing code.
 */
refused_answers: number, 
/**
 * Messages from chats other than the paired one, ignored.
 */
ignored_chats: number, };
