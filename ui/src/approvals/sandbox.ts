// The Sandbox part of Settings → Approvals, pure: what the state means in words, the list
// edits behind "add" and "remove", and the hidden list read from its text box. The core
// (vigil-core `approval/sandbox_settings.rs`: `set_sandbox_writable`, `set_sandbox_hidden`)
// checks every entry again and has the last word; these checks only catch a typing slip
// before a round trip.

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
        'The workspace and the folders you add below are writable, the rest of the system is read-only; your secrets, this computer’s sockets and Vigil’s own files are out of reach.',
    };
  }
  const problem = sandbox.problem?.trim() || 'bubblewrap cannot start here';
  return {
    ready: false,
    headline: `The sandbox is unavailable: ${problem.replace(/\.$/, '')}.`,
    meaning: 'Until it works, commands from the heartbeat and routines are refused, and your own turns ask before every command.',
  };
}

/** Why no command gets a network here, as one sentence; null when they can have one. */
export function networkStatus(sandbox: SandboxView): string | null {
  if (sandbox.network_available) return null;
  const problem = sandbox.network_problem?.trim() || 'Commands get no network: slirp4netns, which gives them one, is not installed';
  return `${problem.charAt(0).toUpperCase()}${problem.slice(1).replace(/\.$/, '')}.`;
}

/** Why package caches are not writable unless added (shown under the folder list). */
export const CACHES_NOTE =
  'Package caches such as ~/.cargo or ~/.npm are not writable by default: a command could plant code there that later runs outside the sandbox, in your next build or install.';

export const SOCKETS_NOTE =
  'A socket is a door into the program behind it: with docker.sock a command can start a container that mounts your whole disk, with a bus socket it can run programs outside the sandbox. Only your own turns get these; runs nobody watches never do.';

export const NETWORK_NOTE = 'When off, commands in the sandbox cannot connect anywhere, not even to servers on this computer.';

/** The warning beside the switch for runs nobody watches. */
export const UNATTENDED_NOTE =
  'Careful: a run that read something hostile could send your files away, with nobody there to stop it.';

/** What the hidden list does (shown under its heading). */
export const HIDDEN_NOTE =
  'These folders and files appear empty to every command, in every sandbox, so a command cannot read your keys and tokens. One path per line; ~ is your home.';

/** What an empty hidden list means. */
export const HIDDEN_EMPTY = 'Nothing is hidden: commands can read ~/.ssh, ~/.aws and every other secret in your home.';

/** The entries of the hidden list as typed, one per line, blank lines left out. */
export function hiddenLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The first typing slip in `entries`, or null. The core (`set_sandbox_hidden`) tidies and checks again. */
export function hiddenSlip(entries: readonly string[]): string | null {
  for (const entry of entries) {
    if (!entry.startsWith('~/') && !entry.startsWith('/') && entry !== '~') {
      return `${entry} is neither in your home (~/…) nor a full path (/…)`;
    }
    if (entry.split('/').includes('..')) return `${entry} contains “..”; write the path without it`;
  }
  return null;
}

/** Two lists with the same entries in the same order. */
export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The list with `typed` added, or why it cannot be. */
export function addFolder(folders: readonly string[], typed: string): { paths: string[] } | { error: string } {
  const folder = typed.trim();
  if (folder === '') return { error: 'Type the full path of a folder, like /home/you/.cache/pip.' };
  if (folder.startsWith('~')) return { error: `Write ${folder} from the root, like /home/you/${folder.replace(/^~\/?/, '')}.` };
  if (!folder.startsWith('/')) return { error: `“${folder}” is not a full path; write it from the root, like /home/you/${folder}.` };
  const bare = folder.length > 1 ? folder.replace(/\/+$/, '') : folder;
  if (folders.includes(bare)) return { error: `${bare} is already writable.` };
  return { paths: [...folders, bare] };
}

/** The socket list with `typed` added, or why it cannot be (a socket is named by its full path). */
export function addSocket(sockets: readonly string[], typed: string): { paths: string[] } | { error: string } {
  const socket = typed.trim();
  if (!socket.startsWith('/')) return { error: `“${socket}” is not a full path; write it from the root, like /run/docker.sock.` };
  return { paths: [...sockets, socket] };
}
