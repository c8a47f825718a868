// The card's content, pure: sections in reading order, one card per absence, how long.
import { describe, expect, it } from 'vitest';
import type { AwayLine, AwaySummary, EventEnvelope } from '../lib/protocol';
import { awayFor, sections, withAwayEvent } from './away';
import { throttledInput, watchInput, INPUT_EVENTS } from './input';

const line = (kind: AwayLine['kind'], title: string, at = 1): AwayLine => ({
  kind,
  title,
  text: 'happened',
  at,
  target: { type: 'routine', routine_id: title },
});

const summary = (lines: AwayLine[], minutes = 192): AwaySummary => ({
  away_since: 1_700_000_000_000,
  back_at: 1_700_000_000_000 + minutes * 60_000 + 20_000,
  lines,
});

describe('the away card', () => {
  it('groups the lines into ran, failed or unknown, waiting and missed, leaving out empty sections', () => {
    const s = summary([
      line('ran', 'Backup', 3),
      line('ran', 'Heartbeat', 2),
      line('failed', 'Deploy'),
      line('unknown', 'Sync'),
      line('missed', 'Report'),
    ]);
    expect(sections(s).map((p) => [p.heading, p.lines.map((l) => l.title)])).toEqual([
      ['Ran', ['Backup', 'Heartbeat']],
      ['Failed or unknown', ['Deploy', 'Sync']],
      ['Missed', ['Report']],
    ]);
  });

  it('says how long the user was away, to the minute', () => {
    expect(awayFor(summary([], 192))).toBe('3 h 12 min');
    expect(awayFor(summary([], 60))).toBe('1 h');
  });

  it('shows the latest absence only', () => {
    const first = summary([line('ran', 'A')]);
    const second = summary([line('missed', 'B')]);
    const event = (s: AwaySummary) =>
      ({ id: 'e', ts: 1, session_id: null, scope: 'app', source: 'system', run_id: null, type: 'while_away', summary: s }) as EventEnvelope;
    expect(withAwayEvent(null, event(first))).toBe(first);
    expect(withAwayEvent(first, event(second))).toBe(second);
    const other = { id: 'x', ts: 1, session_id: null, scope: 'app', source: 'system', run_id: null, type: 'background_paused', paused: true } as EventEnvelope;
    expect(withAwayEvent(second, other)).toBe(second);
  });

  it('drops a waiting line once its approval is answered, and the card with its last line', () => {
    const waiting: AwayLine = { ...line('waiting', 'Build'), target: { type: 'conversation', session_id: 's1', approval_id: 'a1' } };
    const card = summary([line('ran', 'Backup'), waiting]);
    const resolved = (id: string) =>
      ({ id: 'r', ts: 2, session_id: 's1', scope: 'primary', source: 'user', run_id: 'x', type: 'approval_resolved', approval_id: id, decision: 'approve' }) as EventEnvelope;
    expect(withAwayEvent(card, resolved('other'))).toBe(card);
    expect(withAwayEvent(card, resolved('a1'))?.lines).toEqual([card.lines[0]]);
    expect(withAwayEvent(summary([waiting]), resolved('a1'))).toBeNull();
  });
});

describe("the window's input", () => {
  it('is reported at once, then at most once every 30 s', () => {
    let now = 0;
    const sent: number[] = [];
    const report = throttledInput(() => sent.push(now), () => now);
    report();
    now = 29_999;
    report();
    now = 30_000;
    report();
    report();
    expect(sent).toEqual([0, 30_000]);
  });

  it('counts keys, clicks, the pointer and the wheel, and stops when told', () => {
    const target = new EventTarget();
    let sent = 0;
    const stop = watchInput(target as unknown as Window, () => sent++);
    expect(INPUT_EVENTS).toEqual(['keydown', 'pointerdown', 'pointermove', 'wheel']);
    target.dispatchEvent(new Event('pointermove'));
    expect(sent).toBe(1);
    stop();
    // A new watch reports again at once: the old one's listeners are gone.
    const again = watchInput(target as unknown as Window, () => (sent += 10));
    target.dispatchEvent(new Event('keydown'));
    expect(sent).toBe(11);
    again();
  });
});
