import { describe, expect, it } from 'vitest';
import { minutesOf, parseLimit, parseTimeoutMinutes } from './autonomy';

describe('the settings for working on its own', () => {
  it('takes a limit from 1 to 100 turns', () => {
    expect(parseLimit(' 10 ')).toEqual({ ok: true, value: 10 });
    for (const bad of ['0', '-1', '2.5', '101', '', 'ten']) expect(parseLimit(bad).ok, bad).toBe(false);
  });

  it('takes the approval timeout in minutes and saves seconds', () => {
    expect(parseTimeoutMinutes('60')).toEqual({ ok: true, value: 3600 });
    expect(parseTimeoutMinutes('1440')).toEqual({ ok: true, value: 86400 });
    for (const bad of ['0', '1441', '1.5', '']) expect(parseTimeoutMinutes(bad).ok, bad).toBe(false);
    expect(minutesOf(3600)).toBe(60);
    expect(minutesOf(90)).toBe(2);
  });
});
