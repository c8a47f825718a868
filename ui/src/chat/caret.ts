// A message box left focused and untouched lets its caret rest. WebKit blinks the caret of
// a focused text field for as long as the window has the focus, and every blink repaints
// the window: with nothing else happening the app and its web process woke about ten times
// a second for it (`make bench-app`, idle CPU). GTK's own fields stop blinking after 10 s
// without input (gtk-cursor-blink-timeout); WebKit has no such pause and no CSS stops a
// caret (a transparent or read-only one still blinks). So after `CARET_REST_MS` without
// input the box lets go of the focus, still looking focused, and the next key typed while
// nothing else has the focus brings it back, with the caret where it was, and lands there.

/** GTK's default gtk-cursor-blink-timeout. */
export const CARET_REST_MS = 10_000;

/** Keys that type nothing by themselves and stay with the window (Esc stops a reply). */
const NOT_TYPING = new Set(['Escape', 'Shift', 'Control', 'Alt', 'AltGraph', 'Meta', 'CapsLock', 'NumLock', 'OS', 'Super']);

/** The element marked while it rests; where typing goes although it has no focus. */
const RESTING_ATTR = 'data-caret-rest';

/** Where a key typed now would land: the focused element, or a message box at rest. */
export function typingTarget(doc: Document = document): Element | null {
  return doc.querySelector(`[${RESTING_ATTR}]`) ?? doc.activeElement;
}

/**
 * Rests `area`'s caret after `delay` ms without input while it has the focus. `onRest` is
 * told when it rests and when it is back, for the box to keep its focused look meanwhile.
 * Returns the teardown.
 */
export function restCaret(area: HTMLTextAreaElement, onRest: (resting: boolean) => void, delay = CARET_REST_MS): () => void {
  const doc = area.ownerDocument;
  const win = doc.defaultView ?? window;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let selection: [number, number] | null = null;

  const clear = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  /** (Re)starts the pause while the box has the focus. */
  const arm = () => {
    clear();
    if (doc.activeElement === area) timer = setTimeout(rest, delay);
  };
  const rest = () => {
    timer = null;
    if (doc.activeElement !== area) return;
    selection = [area.selectionStart, area.selectionEnd];
    area.setAttribute(RESTING_ATTR, '');
    onRest(true);
    area.blur();
  };
  /** Resting ends: the box has the focus again, or the user put it somewhere else. */
  const end = () => {
    if (selection === null) return;
    selection = null;
    area.removeAttribute(RESTING_ATTR);
    onRest(false);
  };
  const back = () => {
    const at = selection;
    area.focus();
    if (at) area.setSelectionRange(at[0], at[1]);
  };

  const onWindowKey = (e: KeyboardEvent) => {
    if (selection === null || NOT_TYPING.has(e.key)) return;
    if (doc.activeElement !== null && doc.activeElement !== doc.body) return end();
    back();
    const text = e.key === 'Enter' ? (e.shiftKey ? '\n' : null) : e.key;
    const typed = text !== null && [...text].length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey && !e.isComposing;
    if (e.key === 'Enter' && !e.shiftKey) {
      // The box's own Enter: it sends, as it would have with the focus.
      e.preventDefault();
      e.stopImmediatePropagation();
      area.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    } else if (typed) {
      // The key went to the window, not the box: put it where the caret was.
      e.preventDefault();
      e.stopImmediatePropagation();
      area.setRangeText(text, area.selectionStart, area.selectionEnd, 'end');
      area.dispatchEvent(new Event('input', { bubbles: true }));
    } else if ((e.key === 'Backspace' || e.key === 'Delete') && !e.ctrlKey && !e.metaKey && !e.altKey) {
      // A correction after a pause is not lost either: it deletes what it would have.
      e.preventDefault();
      e.stopImmediatePropagation();
      const [from, to] = deletedRange(area.value, area.selectionStart, area.selectionEnd, e.key === 'Backspace');
      area.setRangeText('', from, to, 'end');
      area.dispatchEvent(new Event('input', { bubbles: true }));
    }
    // Anything else (Tab, arrows, Ctrl+V…) acts from the box, which now has the focus.
  };
  const onBlur = () => {
    if (selection === null) clear();
  };
  const onWindowPointer = (e: PointerEvent) => {
    // A click anywhere else takes the focus from a box that has it, even where nothing
    // takes it in its place.
    if (e.target !== area) end();
  };
  const onFocusIn = (e: FocusEvent) => {
    end();
    if (e.target === area) arm();
  };
  const onWindowFocus = () => {
    // The window is active again: WebKit blinks a focused caret anew.
    if (doc.activeElement === area) arm();
  };

  area.addEventListener('keydown', arm);
  area.addEventListener('input', arm);
  area.addEventListener('pointerdown', arm);
  area.addEventListener('blur', onBlur);
  doc.addEventListener('focusin', onFocusIn);
  win.addEventListener('keydown', onWindowKey, true);
  win.addEventListener('pointerdown', onWindowPointer, true);
  win.addEventListener('focus', onWindowFocus);
  arm();
  return () => {
    clear();
    area.removeEventListener('keydown', arm);
    area.removeEventListener('input', arm);
    area.removeEventListener('pointerdown', arm);
    area.removeEventListener('blur', onBlur);
    doc.removeEventListener('focusin', onFocusIn);
    win.removeEventListener('keydown', onWindowKey, true);
    win.removeEventListener('pointerdown', onWindowPointer, true);
    win.removeEventListener('focus', onWindowFocus);
  };
}

/** What Backspace (`back`) or Delete removes from `value` with the selection `[start, end)`:
 *  the selection, else one character before or after the caret (a surrogate pair whole). */
export function deletedRange(value: string, start: number, end: number, back: boolean): [number, number] {
  if (start !== end) return [start, end];
  const pair = (i: number) => /[\uD800-\uDBFF]/.test(value[i] ?? '') && /[\uDC00-\uDFFF]/.test(value[i + 1] ?? '');
  if (back) return start === 0 ? [0, 0] : [start - (start >= 2 && pair(start - 2) ? 2 : 1), start];
  return end >= value.length ? [end, end] : [end, end + (pair(end) ? 2 : 1)];
}
