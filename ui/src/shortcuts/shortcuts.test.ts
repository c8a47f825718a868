import { describe, expect, it } from 'vitest';
import { chordLabel, keysOf, match, SHORTCUTS, titled, type KeyPress } from './shortcuts';

/** A key press on `target` (the page itself unless given). */
function press(key: string, mods: Partial<KeyPress> = {}, target: EventTarget | null = document.body): KeyPress {
  return { key, code: '', ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, isComposing: false, repeat: false, target, ...mods };
}

function element(html: string): Element {
  const host = document.createElement('div');
  host.innerHTML = html;
  document.body.append(host);
  return host.querySelector('[data-target]')!;
}

describe('shortcuts', () => {
  it('maps each chord to its action', () => {
    expect(match(press('n', { ctrlKey: true }))).toBe('new-chat');
    expect(match(press('l', { ctrlKey: true }))).toBe('focus-input');
    expect(match(press('/'))).toBe('focus-input');
    expect(match(press('Escape'))).toBe('stop');
    expect(match(press('1', { ctrlKey: true }))).toBe('show-chat');
    expect(match(press('2', { ctrlKey: true }))).toBe('toggle-processes');
    expect(match(press('3', { ctrlKey: true }))).toBe('toggle-routines');
    expect(match(press(',', { ctrlKey: true }))).toBe('open-settings');
    expect(match(press('/', { ctrlKey: true }))).toBe('help');
    expect(match(press('?', { shiftKey: true }))).toBe('help');
  });

  it('ignores keys that are not shortcuts', () => {
    expect(match(press('n'))).toBeNull();
    expect(match(press('4', { ctrlKey: true }))).toBeNull();
    expect(match(press('Enter', { ctrlKey: true }))).toBeNull();
  });

  it('takes modifiers into account', () => {
    // Caps Lock: still Ctrl+N.
    expect(match(press('N', { ctrlKey: true }))).toBe('new-chat');
    // Ctrl+Shift+N, Alt, Super and Ctrl+Escape are something else.
    expect(match(press('N', { ctrlKey: true, shiftKey: true }))).toBeNull();
    expect(match(press('n', { ctrlKey: true, altKey: true }))).toBeNull();
    expect(match(press('n', { metaKey: true }))).toBeNull();
    expect(match(press('3', { ctrlKey: true, metaKey: true }))).toBeNull();
    expect(match(press('Escape', { ctrlKey: true }))).toBeNull();
    expect(match(press('Escape', { shiftKey: true }))).toBeNull();
    // A plain "/" with Ctrl held is the help, not the message box.
    expect(match(press('/', { ctrlKey: true }))).toBe('help');
    // Layouts where "/" needs Shift (German: Shift+7) still reach it.
    expect(match(press('/', { shiftKey: true }))).toBe('focus-input');
    expect(match(press('/', { ctrlKey: true, shiftKey: true }))).toBe('help');
  });

  it('ignores held keys and keys that compose text', () => {
    expect(match(press('n', { ctrlKey: true, repeat: true }))).toBeNull();
    expect(match(press('/', { isComposing: true }))).toBeNull();
  });

  it('finds digits by position on AZERTY and letters by position on non-Latin layouts', () => {
    expect(match(press('&', { ctrlKey: true, code: 'Digit1' }))).toBe('show-chat');
    expect(match(press('"', { ctrlKey: true, code: 'Digit3' }))).toBe('toggle-routines');
    expect(match(press('т', { ctrlKey: true, code: 'KeyN' }))).toBe('new-chat');
    // A Latin layout is matched by the letter it types: Dvorak's B sits where QWERTY has N.
    expect(match(press('b', { ctrlKey: true, code: 'KeyN' }))).toBeNull();
  });

  it('leaves "/" and "?" to text fields but keeps Ctrl chords and Escape there', () => {
    const input = element('<input data-target type="text">');
    const area = element('<textarea data-target></textarea>');
    const editable = element('<div data-target contenteditable="true"></div>');
    for (const field of [input, area]) {
      expect(match(press('/', {}, field))).toBeNull();
      expect(match(press('?', { shiftKey: true }, field))).toBeNull();
      expect(match(press('n', { ctrlKey: true }, field))).toBe('new-chat');
      expect(match(press('/', { ctrlKey: true }, field))).toBe('help');
      expect(match(press('Escape', {}, field))).toBe('stop');
    }
    // jsdom does not compute isContentEditable; a browser does.
    Object.defineProperty(editable, 'isContentEditable', { value: true });
    expect(match(press('/', {}, editable))).toBeNull();
  });

  it('treats a checkbox or a button with the focus as not typing', () => {
    expect(match(press('/', {}, element('<input data-target type="checkbox">')))).toBe('focus-input');
    expect(match(press('?', { shiftKey: true }, element('<button data-target>x</button>')))).toBe('help');
  });

  it('leaves the shell its keys inside a terminal, but not pane switching', () => {
    const term = element('<div class="xterm"><textarea data-target class="xterm-helper-textarea"></textarea></div>');
    expect(match(press('l', { ctrlKey: true }, term))).toBeNull();
    expect(match(press('n', { ctrlKey: true }, term))).toBeNull();
    expect(match(press('Escape', {}, term))).toBeNull();
    expect(match(press('/', { ctrlKey: true }, term))).toBeNull();
    expect(match(press('/', {}, term))).toBeNull();
    expect(match(press('1', { ctrlKey: true }, term))).toBe('show-chat');
    expect(match(press(',', { ctrlKey: true }, term))).toBe('open-settings');
  });

  it('labels keys for the help and for button titles', () => {
    expect(SHORTCUTS.map((s) => s.chords.map(chordLabel).join(' or '))).toEqual([
      'Ctrl+N',
      'Ctrl+K',
      'Ctrl+L or /',
      'Esc',
      'Ctrl+1',
      'Ctrl+2',
      'Ctrl+3',
      'Ctrl+,',
      'Ctrl+/ or ?',
    ]);
    expect(keysOf('toggle-processes')).toBe('Ctrl+2');
    expect(keysOf('search')).toBe('Ctrl+K');
    expect(titled('Routines', 'toggle-routines')).toBe('Routines (Ctrl+3)');
  });

  it('gives every action exactly one row', () => {
    const actions = SHORTCUTS.map((s) => s.action);
    expect(new Set(actions).size).toBe(actions.length);
  });
});
