//! Tauri commands: thin adapters from IPC to the core runtime. Each takes state, calls one
//! core function, and maps failures to `CommandError` here and nowhere else.

use tauri::State;
use tauri_plugin_store::StoreExt;
use vigil_core::approval::SettingError;
use vigil_core::protocol::{
    ApprovalKind, ApprovalPolicy, ApprovalsView, CommandError, ConnectionVerdict, HealthView, HeartbeatChecks,
    HeartbeatSettings, HeartbeatView, History, Op, ProcessSummary, ProviderSettings, RoutineDraft, RoutineRun,
    RoutineSaved, RoutineView, RoutinesView, SavedMessage, SchedulePreview, SessionSummary, SettingsView,
};
use vigil_core::routines::{Refusal, StoreError};
use vigil_core::settings::{self, PROVIDER_KEY};

use crate::AppState;

fn error(code: &str, message: impl std::fmt::Display) -> CommandError {
    CommandError {
        code: code.to_string(),
        message: message.to_string(),
        field: None,
    }
}

/// A routine error for the editor. Refusals (`invalid_routine`) name the field they are
/// about, so the form shows them there.
fn routine_error(e: StoreError) -> CommandError {
    match e {
        StoreError::Rejected(refusal) => invalid_routine(refusal),
        StoreError::Corrupted(_) => error("routines_corrupted", e),
        StoreError::Locked(_) => error("busy", e),
        StoreError::Io { .. } => error("storage", e),
        e => error("routines", e),
    }
}

fn invalid_routine(refusal: Refusal) -> CommandError {
    CommandError {
        field: refusal.field.map(str::to_string),
        ..error("invalid_routine", refusal.message)
    }
}

#[tauri::command]
pub async fn submit(state: State<'_, AppState>, op: Op) -> Result<(), CommandError> {
    state.runtime.submit(op);
    Ok(())
}

#[tauri::command]
pub async fn history(state: State<'_, AppState>, session_id: Option<String>) -> Result<History, CommandError> {
    let id = session_id.unwrap_or_else(|| vigil_core::session::PRIMARY_SESSION.to_string());
    let loaded = state.runtime.history(Some(&id)).map_err(|e| error("storage", e))?;
    let messages = loaded.ids.into_iter().zip(loaded.messages);
    Ok(History {
        session_id: id,
        messages: messages.map(|(id, message)| SavedMessage { id, message }).collect(),
        warnings: loaded.warnings,
    })
}

#[tauri::command]
pub async fn list_sessions(state: State<'_, AppState>) -> Result<Vec<SessionSummary>, CommandError> {
    state.runtime.sessions().map_err(|e| error("session", e))
}

fn stored_provider(app: &tauri::AppHandle, state: &AppState) -> Result<Option<ProviderSettings>, CommandError> {
    let store = app.store(&state.settings_path).map_err(|e| error("storage", e))?;
    Ok(store.get(PROVIDER_KEY).and_then(|v| serde_json::from_value(v).ok()))
}

fn current_view(app: &tauri::AppHandle, state: &AppState) -> Result<SettingsView, CommandError> {
    let stored = stored_provider(app, state)?;
    let warnings = state.startup_warnings.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(state.runtime.apply_settings(stored, warnings))
}

#[tauri::command]
pub async fn get_settings(app: tauri::AppHandle, state: State<'_, AppState>) -> Result<SettingsView, CommandError> {
    current_view(&app, &state)
}

/// Validates and saves provider settings; `api_key`: absent keeps the stored key, empty
/// forgets it, anything else replaces it. Takes effect for the next turn.
#[tauri::command]
pub async fn save_settings(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    provider: ProviderSettings,
    api_key: Option<String>,
) -> Result<SettingsView, CommandError> {
    settings::validate(&provider).map_err(|m| error("invalid_settings", m))?;
    let store = app.store(&state.settings_path).map_err(|e| error("storage", e))?;
    store.set(
        PROVIDER_KEY,
        serde_json::to_value(&provider).map_err(|e| error("storage", e))?,
    );
    store.save().map_err(|e| error("storage", e))?;
    if let Some(key) = api_key {
        state
            .runtime
            .set_api_key(provider.kind, &key)
            .map_err(|m| error("secrets", m))?;
    }
    state.startup_warnings.lock().unwrap_or_else(|e| e.into_inner()).clear();
    current_view(&app, &state)
}

#[tauri::command]
pub async fn test_connection(
    state: State<'_, AppState>,
    provider: ProviderSettings,
    api_key: Option<String>,
) -> Result<ConnectionVerdict, CommandError> {
    Ok(state.runtime.test_connection(provider, api_key).await)
}

/// Raises a native notification through the same path background events use.
#[tauri::command]
pub async fn notify(state: State<'_, AppState>, title: String, body: String) -> Result<(), CommandError> {
    state.runtime.notify(title, body);
    Ok(())
}

/// The store key of the approval policy.
pub const APPROVAL_POLICY_KEY: &str = "approval_policy";

#[tauri::command]
pub async fn get_approvals(state: State<'_, AppState>) -> Result<ApprovalsView, CommandError> {
    Ok(state.runtime.approvals().view())
}

/// Saves the policy; applies to the next check. Refused while the environment fixes it.
#[tauri::command]
pub async fn set_approval_policy(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    policy: ApprovalPolicy,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    if approvals.view().policy_from_env {
        return Err(error(
            "invalid_settings",
            "VIGIL_APPROVAL_POLICY is set in the environment; it decides the policy.",
        ));
    }
    let store = app.store(&state.settings_path).map_err(|e| error("storage", e))?;
    store.set(
        APPROVAL_POLICY_KEY,
        serde_json::to_value(policy).map_err(|e| error("storage", e))?,
    );
    store.save().map_err(|e| error("storage", e))?;
    approvals.set_policy(policy);
    Ok(approvals.view())
}

#[tauri::command]
pub async fn forget_approval(
    state: State<'_, AppState>,
    kind: ApprovalKind,
    prefix: String,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals.forget(kind, &prefix).map_err(|e| error("storage", e))?;
    Ok(approvals.view())
}

/// "Your own turns' commands may use the network"; saved by the core at once, for the next
/// command.
#[tauri::command]
pub async fn set_sandbox_network(state: State<'_, AppState>, on: bool) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals.set_sandbox_network(on).map_err(|e| error("storage", e))?;
    Ok(approvals.view())
}

/// "Runs nobody watches may use the network" (heartbeat, routines, continuations); saved by
/// the core at once.
#[tauri::command]
pub async fn set_sandbox_unattended_network(
    state: State<'_, AppState>,
    on: bool,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals
        .set_sandbox_unattended_network(on)
        .map_err(|e| error("storage", e))?;
    Ok(approvals.view())
}

/// "This routine may use the network" (its jobs, while runs nobody watches may not); saved by
/// the core at once.
#[tauri::command]
pub async fn set_routine_network(
    state: State<'_, AppState>,
    id: String,
    on: bool,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals
        .set_routine_network(&id, on)
        .map_err(|e| error("storage", e))?;
    Ok(approvals.view())
}

/// Replaces the paths every sandbox shows empty. A refused entry is `invalid_path` on
/// `hidden`, and nothing is saved.
#[tauri::command]
pub async fn set_sandbox_hidden(
    state: State<'_, AppState>,
    hidden: Vec<String>,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals.set_sandbox_hidden(&hidden).map_err(|e| match e {
        SettingError::Refused(why) => CommandError {
            field: Some("hidden".to_string()),
            ..error("invalid_path", why)
        },
        other => error("storage", other),
    })?;
    Ok(approvals.view())
}

/// Replaces the sandbox's extra writable folders. Each must be a full path to an existing
/// folder away from Vigil's data folder; a refused one is `invalid_folder` on `writable`
/// and nothing is saved.
#[tauri::command]
pub async fn set_sandbox_writable(
    state: State<'_, AppState>,
    folders: Vec<String>,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals.set_sandbox_writable(&folders).map_err(invalid_folder)?;
    Ok(approvals.view())
}

/// Replaces the Unix sockets the user's own turns' commands may connect to. Each must be a
/// full path to a socket there now, away from Vigil's data folder; a refused one is
/// `invalid_socket` on `sockets` and nothing is saved.
#[tauri::command]
pub async fn set_sandbox_sockets(
    state: State<'_, AppState>,
    sockets: Vec<String>,
) -> Result<ApprovalsView, CommandError> {
    let approvals = state.runtime.approvals();
    approvals
        .set_sandbox_sockets(&sockets)
        .map_err(|message| CommandError {
            field: Some("sockets".to_string()),
            ..error("invalid_socket", message)
        })?;
    Ok(approvals.view())
}

fn invalid_folder(message: String) -> CommandError {
    CommandError {
        field: Some("writable".to_string()),
        ..error("invalid_folder", message)
    }
}

/// Applies the stored approval policy at start-up (the environment, if set, wins).
pub fn restore_approval_policy(app: &tauri::AppHandle, state: &AppState) {
    if state.runtime.approvals().view().policy_from_env {
        return;
    }
    let stored = app
        .store(&state.settings_path)
        .ok()
        .and_then(|s| s.get(APPROVAL_POLICY_KEY))
        .and_then(|v| serde_json::from_value::<ApprovalPolicy>(v).ok());
    if let Some(policy) = stored {
        state.runtime.approvals().set_policy(policy);
    }
}

/// The heartbeat's settings, last run, next run and counters, for the status indicator.
#[tauri::command]
pub async fn heartbeat_view(state: State<'_, AppState>) -> Result<HeartbeatView, CommandError> {
    Ok(state.runtime.heartbeat_view())
}

/// The health check: what runs now (lanes, locks, wakes, routines, processes) and the
/// counters since start, for the Settings pane's Health section.
#[tauri::command]
pub async fn health(state: State<'_, AppState>) -> Result<HealthView, CommandError> {
    Ok(state.runtime.health().await)
}

/// Saves heartbeat settings; they apply without a restart. Values out of range are refused
/// with a message naming them.
#[tauri::command]
pub async fn save_heartbeat_settings(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    settings: HeartbeatSettings,
) -> Result<HeartbeatView, CommandError> {
    // Checked before anything is saved: a bad value is refused, the running heartbeat untouched.
    let problems = vigil_core::heartbeat::HeartbeatConfig::resolve(&settings).warnings;
    if !problems.is_empty() {
        return Err(error("invalid_settings", problems.join(" ")));
    }
    let store = app.store(&state.settings_path).map_err(|e| error("storage", e))?;
    store.set(
        settings::HEARTBEAT_KEY,
        serde_json::to_value(&settings).map_err(|e| error("storage", e))?,
    );
    store.save().map_err(|e| error("storage", e))?;
    state.runtime.set_heartbeat_settings(&settings);
    Ok(state.runtime.heartbeat_view())
}

/// Every process, for the Processes panel.
#[tauri::command]
pub async fn list_processes(state: State<'_, AppState>) -> Result<Vec<ProcessSummary>, CommandError> {
    Ok(state.runtime.list_processes().await)
}

/// A process's kept terminal bytes (base64), to replay in the panel's terminal.
#[tauri::command]
pub async fn process_output(state: State<'_, AppState>, process_id: String) -> Result<String, CommandError> {
    state
        .runtime
        .process_output(&process_id)
        .await
        .map_err(|m| error("process", m))
}

/// The free-text checks of `HEARTBEAT.md`, for the Routines pane's editor.
#[tauri::command]
pub async fn heartbeat_checks(state: State<'_, AppState>) -> Result<HeartbeatChecks, CommandError> {
    state.runtime.heartbeat_checks().map_err(checks_error)
}

/// Saves the checks; `expected` is the text the editor loaded (a changed file is refused).
#[tauri::command]
pub async fn save_heartbeat_checks(
    state: State<'_, AppState>,
    expected: String,
    text: String,
) -> Result<HeartbeatChecks, CommandError> {
    state
        .runtime
        .save_heartbeat_checks(&expected, &text)
        .await
        .map_err(checks_error)
}

fn checks_error(e: StoreError) -> CommandError {
    match e {
        StoreError::Rejected(refusal) => error("invalid_checks", refusal),
        e => error("heartbeat_file", e),
    }
}

/// The routines and the state of `HEARTBEAT.md`'s task block, for the Routines pane.
#[tauri::command]
pub async fn list_routines(state: State<'_, AppState>) -> Result<RoutinesView, CommandError> {
    Ok(state.runtime.routines())
}

/// Creates a routine as the user's; over the soft limit it is created with a warning.
#[tauri::command]
pub async fn add_routine(state: State<'_, AppState>, draft: RoutineDraft) -> Result<RoutineSaved, CommandError> {
    let (routine, warnings) = state.runtime.add_routine(draft).await.map_err(routine_error)?;
    Ok(RoutineSaved { routine, warnings })
}

/// Changes the fields the draft names; the others keep their value.
#[tauri::command]
pub async fn update_routine(
    state: State<'_, AppState>,
    id: String,
    draft: RoutineDraft,
) -> Result<RoutineView, CommandError> {
    state.runtime.update_routine(&id, draft).await.map_err(routine_error)
}

/// Removes a routine so it can be restored; `hard` deletes it and its history for good.
#[tauri::command]
pub async fn remove_routine(state: State<'_, AppState>, id: String, hard: Option<bool>) -> Result<(), CommandError> {
    state
        .runtime
        .remove_routine(&id, hard.unwrap_or(false))
        .await
        .map_err(routine_error)
}

/// Brings a removed routine back as it was.
#[tauri::command]
pub async fn restore_routine(state: State<'_, AppState>, id: String) -> Result<RoutineView, CommandError> {
    state.runtime.restore_routine(&id).await.map_err(routine_error)
}

/// Runs a routine now; its schedule is unchanged.
#[tauri::command]
pub async fn run_routine_now(state: State<'_, AppState>, id: String) -> Result<(), CommandError> {
    state.runtime.run_routine_now(&id).await.map_err(routine_error)
}

/// Runs again, now, a routine whose run `run_id` ended `unknown` (cut off after it changed
/// something); its schedule is unchanged.
#[tauri::command]
pub async fn retry_routine_run(state: State<'_, AppState>, id: String, run_id: String) -> Result<(), CommandError> {
    state
        .runtime
        .resolve_routine_run(&id, &run_id, true)
        .await
        .map_err(routine_error)
}

/// Leaves a routine's `unknown` run as it is: the user checked, nothing to redo.
#[tauri::command]
pub async fn dismiss_routine_run(state: State<'_, AppState>, id: String, run_id: String) -> Result<(), CommandError> {
    state
        .runtime
        .resolve_routine_run(&id, &run_id, false)
        .await
        .map_err(routine_error)
}

/// Pauses (`false`) or resumes (`true`) a routine.
#[tauri::command]
pub async fn set_routine_enabled(
    state: State<'_, AppState>,
    id: String,
    enabled: bool,
) -> Result<RoutineView, CommandError> {
    state
        .runtime
        .set_routine_enabled(&id, enabled)
        .await
        .map_err(routine_error)
}

/// Approves a routine's check or URL as it is written now (its card showed what runs, how
/// often, with what access).
#[tauri::command]
pub async fn approve_routine(state: State<'_, AppState>, id: String) -> Result<RoutinesView, CommandError> {
    state
        .runtime
        .approve_routine(&id)
        .map_err(|e| error("invalid_routine", e))
}

/// A routine's latest runs, oldest first.
#[tauri::command]
pub async fn routine_history(state: State<'_, AppState>, id: String) -> Result<Vec<RoutineRun>, CommandError> {
    Ok(state.runtime.routine_history(&id))
}

/// The editor's live preview: the schedule in words and its next runs, or why it cannot be
/// used (`invalid_routine`, naming the field), with the same checks as saving.
#[tauri::command]
pub async fn preview_schedule(
    state: State<'_, AppState>,
    schedule: Option<String>,
    next_run_at: Option<i64>,
    timezone: Option<String>,
) -> Result<SchedulePreview, CommandError> {
    state
        .runtime
        .preview_schedule(schedule.as_deref(), next_run_at, timezone.as_deref())
        .map_err(invalid_routine)
}

/// Replaces a corrupted task block with the last good snapshot; returns how many routines
/// came back.
#[tauri::command]
pub async fn restore_routines(state: State<'_, AppState>) -> Result<usize, CommandError> {
    state
        .runtime
        .restore_routines_from_snapshot()
        .await
        .map_err(routine_error)
}

/// Trusts `HEARTBEAT.md` as it is now, after it was held (replaced while a sandboxed command
/// ran); its routines run again.
#[tauri::command]
pub async fn trust_heartbeat_file(state: State<'_, AppState>) -> Result<RoutinesView, CommandError> {
    state.runtime.trust_heartbeat_file().await.map_err(routine_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_writable_folder_is_invalid_folder_on_the_writable_field() {
        let e = invalid_folder("relative/path is not a full path to an existing folder".to_string());
        assert_eq!(e.code, "invalid_folder");
        assert_eq!(e.field.as_deref(), Some("writable"));
        assert_eq!(e.message, "relative/path is not a full path to an existing folder");
    }
}

/// Writes an image the window holds as bytes (pasted, dropped or picked: the request body,
/// its MIME type in the `x-mime` header) to a file under the data folder, and returns the
/// path to send as a `user_message` attachment.
#[tauri::command]
pub async fn stage_attachment(
    state: State<'_, AppState>,
    request: tauri::ipc::Request<'_>,
) -> Result<String, CommandError> {
    let tauri::ipc::InvokeBody::Raw(bytes) = request.body() else {
        return Err(error("invalid_attachment", "the image did not arrive as bytes"));
    };
    let mime = request
        .headers()
        .get("x-mime")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(ext) = vigil_core::protocol::image_extension(mime) else {
        return Err(error(
            "invalid_attachment",
            "only PNG, JPEG, GIF and WebP images can be sent",
        ));
    };
    let (data_dir, bytes) = (state.runtime.data_dir().to_path_buf(), bytes.clone());
    let name = format!("image.{ext}");
    tauri::async_runtime::spawn_blocking(move || vigil_core::runtime::stage_attachment(&data_dir, &name, &bytes))
        .await
        .map_err(|e| error("storage", e))?
        .map(|path| path.display().to_string())
        .map_err(|e| error("invalid_attachment", e))
}

/// The bytes of an image stored with a conversation, for its thumbnail and full view.
#[tauri::command]
pub async fn image_blob(
    state: State<'_, AppState>,
    session_id: String,
    sha256: String,
    mime: String,
) -> Result<tauri::ipc::Response, CommandError> {
    match state.runtime.image(&session_id, &sha256, &mime) {
        Ok(Some(bytes)) => Ok(tauri::ipc::Response::new(bytes)),
        Ok(None) => Err(error("not_found", "this image's file is missing")),
        Err(e) => Err(error("storage", e)),
    }
}
