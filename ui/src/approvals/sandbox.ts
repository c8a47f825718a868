// The Sandbox part of Settings → Approvals, pure: what the state means in words, and the
// list edits behind "add" and "remove". The core (vigil-core `approval.rs`,
// `set_sandbox_writable`) checks every folder again and has the last word; these checks
// only catch a typing slip before a round trip.

import type { SandboxView } from '../lib/protocol';

export interface SandboxStatus {
  ready: boolean;
  /** One line: ready, or what is wrong. */
  headline: string;
  /** What it means for the user's commands. */
  meaning: string;
}

export function sandboxStatus(sandbox: SandboxView): SandboxStatus {
  if (sandbox.available) {
    return {
      ready: true,
      headline: 'Ready: commands run in a bubblewrap sandbox.',
      meaning:
        'The workspace and the command’s own folder are writable, the rest of the system is read-only, and Vigil’s own files are hidden.',
    };
  }
  const problem = sandbox.problem?.trim() || 'bubblewrap cannot start here';
  return {
    ready: false,
    headline: `The sandbox is unavailable: ${problem.replace(/\.$/, '')}.`,
    meaning: 'Until it works, commands from the heartbeat and routines are refused, and your own turns ask before every command.',
  };
}

/** Why package caches are not writable unless added (shown under the folder list). */
export const CACHES_NOTE =
  'Package caches such as ~/.cargo or ~/.npm are not writable by default: a command could plant code there that later runs outside the sandbox, in your next build or install.';

export const NETWORK_NOTE = 'Off: commands in the sandbox cannot connect anywhere, not even to servers on this computer.';

/** The list with `typed` added, or why it cannot be. */
export function addFolder(folders: readonly string[], typed: string): { folders: string[] } | { error: string } {
  const folder = typed.trim();
  if (folder === '') return { error: 'Type the full path of a folder, like /home/you/.cache/pip.' };
  if (folder.startsWith('~')) return { error: `Write ${folder} from the root, like /home/you/${folder.replace(/^~\/?/, '')}.` };
  if (!folder.startsWith('/')) return { error: `“${folder}” is not a full path; write it from the root, like /home/you/${folder}.` };
  const bare = folder.length > 1 ? folder.replace(/\/+$/, '') : folder;
  if (folders.includes(bare)) return { error: `${bare} is already writable.` };
  return { folders: [...folders, bare] };
}

/** The list without `folder`. */
export function removeFolder(folders: readonly string[], folder: string): string[] {
  return folders.filter((f) => f !== folder);
}
