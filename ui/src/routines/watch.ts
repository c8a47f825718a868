// A routine's trigger and check in words for its row: "Watching `logs/` · fired 3× today ·
// last 10:42 — ERROR db timeout", and the check it runs. Pure, for the row and its tests.
import type { RoutineView, WatchStatus } from '../lib/protocol';

/** "10:42" in the routine's zone. */
function clockTime(ms: number, zone: string): string {
  try {
    return new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: zone }).format(ms);
  } catch {
    return new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' }).format(ms);
  }
}

/** The trigger line: what it watches, how often it fired today, the last evidence. */
export function watchLine(w: WatchStatus, zone: string): string {
  const parts = [w.summary];
  if (w.fired_today > 0) parts.push(`fired ${w.fired_today}× today`);
  if (w.last_fired_at !== null) {
    const last = `last ${clockTime(w.last_fired_at, zone)}`;
    parts.push(w.last_evidence ? `${last} — ${w.last_evidence}` : last);
  }
  return parts.join(' · ');
}

/** "Check: `df …` (acts when > 80) · notifies, no model". */
export function checkLine(r: RoutineView): string | null {
  const action = r.action === 'notify' ? 'notifies you, no model' : null;
  if (!r.check) return action ? `Then: ${action}` : null;
  const check = `Check: ${r.check.command} (acts when ${r.check.when})`;
  return action ? `${check} · ${action}` : check;
}
