// The keyboard shortcuts: one table that the window's key handler (App.svelte) and the help
// overlay both read, and `match`, which turns a key press into the action it stands for.
// Which panes are open is the window's business, not this module's: it only knows keys and
// where the focus is (typing in a field, inside a terminal).

export type ShortcutAction =
  | 'new-chat'
  | 'search'
  | 'focus-input'
  | 'stop'
  | 'show-chat'
  | 'toggle-processes'
  | 'toggle-routines'
  | 'open-settings'
  | 'help';

/** One key combination. */
export interface Chord {
  /** `KeyboardEvent.key`; letters in lower case. */
  key: string;
  ctrl: boolean;
  /**
   * `KeyboardEvent.code` that stands for the key where the layout types something else:
   * digits on AZERTY (Ctrl+& is Ctrl+1, as browsers do for tabs) and letters on non-Latin
   * layouts. A Latin letter is matched by what it types, so Dvorak's Ctrl+N is where N is.
   */
  code?: string;
  /**
   * Whether it works while the focus is in a text field. A plain character never does: it
   * is text. Escape does, so it can stop a turn from the message box.
   */
  whileTyping: boolean;
}

export interface Shortcut {
  action: ShortcutAction;
  /** What the help overlay says it does. */
  label: string;
  /** The first is the one shown in button titles. */
  chords: readonly Chord[];
  /**
   * Whether it works inside a terminal. A shell owns Ctrl+L, Ctrl+N, Ctrl+/ and Escape;
   * switching panes has no meaning there, so those still get the user out.
   */
  inTerminal: boolean;
}

const ctrl = (key: string, code?: string): Chord => ({ key, ctrl: true, code, whileTyping: true });
const plain = (key: string): Chord => ({ key, ctrl: false, whileTyping: false });

export const SHORTCUTS: readonly Shortcut[] = [
  { action: 'new-chat', label: 'New conversation', chords: [ctrl('n', 'KeyN')], inTerminal: false },
  { action: 'search', label: 'Search all conversations', chords: [ctrl('k', 'KeyK')], inTerminal: false },
  { action: 'focus-input', label: 'Go to the message box', chords: [ctrl('l', 'KeyL'), plain('/')], inTerminal: false },
  {
    action: 'stop',
    label: 'Stop the reply',
    chords: [{ key: 'Escape', ctrl: false, whileTyping: true }],
    inTerminal: false,
  },
  { action: 'show-chat', label: 'Chat (close panes)', chords: [ctrl('1', 'Digit1')], inTerminal: true },
  { action: 'toggle-processes', label: 'Show or hide processes', chords: [ctrl('2', 'Digit2')], inTerminal: true },
  { action: 'toggle-routines', label: 'Routines', chords: [ctrl('3', 'Digit3')], inTerminal: true },
  { action: 'open-settings', label: 'Settings', chords: [ctrl(',', 'Comma')], inTerminal: true },
  { action: 'help', label: 'Keyboard shortcuts', chords: [ctrl('/', 'Slash'), plain('?')], inTerminal: false },
];

/** What `match` reads of a key press (a `KeyboardEvent` has it all). */
export type KeyPress = Pick<
  KeyboardEvent,
  'key' | 'code' | 'ctrlKey' | 'metaKey' | 'altKey' | 'shiftKey' | 'isComposing' | 'repeat' | 'target'
>;

/** Input types that take text; a checkbox or a button with the focus does not. */
const TEXT_INPUTS = new Set(['text', 'search', 'url', 'email', 'password', 'tel', 'number', 'date', 'time', 'datetime-local', 'month', 'week']);

/** Whether the key press goes into a field that takes text (where "/" is a character). */
export function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof Element)) return false;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) return TEXT_INPUTS.has(target.type);
  return target instanceof HTMLElement && target.isContentEditable;
}

/** Whether the key press goes to a terminal (xterm.js takes keys through its own textarea). */
export function inTerminal(target: EventTarget | null): boolean {
  return target instanceof Element && target.closest('.xterm') !== null;
}

/** A character no Latin layout types: the layout is Cyrillic, Greek, … */
const nonLatin = (key: string) => key.length === 1 && key.charCodeAt(0) > 0x7e;

function chordMatches(chord: Chord, e: KeyPress): boolean {
  if (e.ctrlKey !== chord.ctrl) return false;
  const punctuation = chord.key.length === 1 && !/[a-z0-9]/.test(chord.key);
  // Shift is how some layouts reach "/" or "?", so it only matters for letters, digits and
  // named keys (Ctrl+Shift+N is not Ctrl+N).
  if (e.shiftKey && !punctuation) return false;
  if (e.key.toLowerCase() === chord.key.toLowerCase()) return true;
  if (chord.code === undefined || e.code !== chord.code) return false;
  return /^[0-9]$/.test(chord.key) || nonLatin(e.key);
}

/** The action a key press stands for, or null. */
export function match(e: KeyPress): ShortcutAction | null {
  // Alt and Super belong to the desktop and to menus; held keys would repeat an action.
  if (e.isComposing || e.repeat || e.altKey || e.metaKey) return null;
  const typing = typingIn(e.target);
  const terminal = inTerminal(e.target);
  for (const shortcut of SHORTCUTS) {
    if (terminal && !shortcut.inTerminal) continue;
    for (const chord of shortcut.chords) {
      if (typing && !chord.whileTyping) continue;
      if (chordMatches(chord, e)) return shortcut.action;
    }
  }
  return null;
}

const KEY_NAME: Record<string, string> = { Escape: 'Esc' };

/** "Ctrl+N", "/", "Esc". */
export function chordLabel(chord: Chord): string {
  const key = KEY_NAME[chord.key] ?? chord.key.toUpperCase();
  return chord.ctrl ? `Ctrl+${key}` : key;
}

/** The keys of an action for a button's title: "Ctrl+3". */
export function keysOf(action: ShortcutAction): string {
  const shortcut = SHORTCUTS.find((s) => s.action === action);
  return shortcut ? chordLabel(shortcut.chords[0]) : '';
}

/** A button's title with its shortcut: "Routines (Ctrl+3)". */
export function titled(label: string, action: ShortcutAction): string {
  return `${label} (${keysOf(action)})`;
}
