import { describe, expect, it } from 'vitest';
import type { HeartbeatSettings } from '../lib/protocol';
import { formFromSettings, hoursNote, parseHhmm, settingsFromForm, validate, type HeartbeatForm } from './form';

const defaults: HeartbeatSettings = { enabled: true, every: '30m', ackMaxChars: 300, notifications: true, dailyTokenBudget: 0, idleAfterHours: 8, reflectionEveryHours: 24, reflectionAddsRoutines: false, runTimeoutMinutes: 10 };
const form = (patch: Partial<HeartbeatForm> = {}): HeartbeatForm => ({ ...formFromSettings(defaults), ...patch });

describe('heartbeat settings form', () => {
  it('round-trips settings, leaving optional fields out when empty', () => {
    expect(settingsFromForm(form())).toEqual({ settings: defaults });
    const full: HeartbeatSettings = {
      enabled: false,
      every: '1h30m',
      ackMaxChars: 0,
      notifications: false,
      dailyTokenBudget: 50_000,
      idleAfterHours: 0,
      reflectionEveryHours: 0,
      reflectionAddsRoutines: true,
      runTimeoutMinutes: 3,
      prompt: 'Check the backups.',
      model: 'claude-haiku-4-5',
      activeHours: { start: '08:00', end: '24:00', timezone: 'Europe/Berlin' },
    };
    expect(settingsFromForm(formFromSettings(full))).toEqual({ settings: full });
    expect(settingsFromForm(form({ start: '22:00', end: '06:00', prompt: '  ', model: ' ' }))).toEqual({
      settings: { ...defaults, activeHours: { start: '22:00', end: '06:00' } },
    });
  });

  it('turns the daily reflection off and on again, keeping its period', () => {
    const every48 = formFromSettings({ ...defaults, reflectionEveryHours: 48 });
    expect(every48.reflect).toBe(true);
    const off = settingsFromForm({ ...every48, reflect: false });
    expect('settings' in off && off.settings.reflectionEveryHours).toBe(0);
    const on = settingsFromForm({ ...formFromSettings({ ...defaults, reflectionEveryHours: 0 }), reflect: true });
    expect('settings' in on && on.settings.reflectionEveryHours, 'back to once a day').toBe(24);
    expect(settingsFromForm({ ...every48 })).toEqual({ settings: { ...defaults, reflectionEveryHours: 48 } });
  });

  it('parses HH:MM as the core does, 24:00 only as an end', () => {
    expect(['00:00', '8:05', '23:59'].map((t) => parseHhmm(t, false))).toEqual([0, 485, 1439]);
    expect(parseHhmm('24:00', true)).toBe(1440);
    expect(['24:00', '12:60', '7', '07:5', 'ab:cd', '25:00'].map((t) => parseHhmm(t, false))).toEqual([null, null, null, null, null, null]);
  });

  it('names the field of each obvious mistake', () => {
    expect(validate(form())).toEqual({});
    expect(Object.keys(validate(form({ every: '', ackMaxChars: '-1', start: '25:00', end: '9' })))).toEqual([
      'every',
      'start',
      'end',
      'ackMaxChars',
    ]);
    expect(Object.keys(validate(form({ every: 'soon', ackMaxChars: '1.5' })))).toEqual(['every', 'ackMaxChars']);
    expect(Object.keys(validate(form({ dailyTokenBudget: '10k', idleAfterHours: '' })))).toEqual([
      'dailyTokenBudget',
      'idleAfterHours',
    ]);
    expect(validate(form({ ackMaxChars: '20001' })).ackMaxChars).toMatch(/0 to 20,000/);
    expect(Object.keys(validate(form({ runTimeoutMinutes: '0' })))).toEqual(['runTimeoutMinutes']);
    expect(validate(form({ runTimeoutMinutes: '1441' })).runTimeoutMinutes).toMatch(/1 to 1,440/);
    expect(validate(form({ start: '08:00' })).end).toMatch(/end time/);
    expect(validate(form({ timezone: 'Europe/Berlin' })).timezone).toMatch(/start and end/);
    expect(validate(form({ start: '08:00', end: '17:00', timezone: 'Mars/Olympus' })).timezone).toMatch(/not a time zone/);
    expect(validate(form({ start: '08:00', end: '17:00', timezone: 'local' }))).toEqual({});
    for (const every of ['0', '45', '1h30m', '90s', '2 hours']) expect(validate(form({ every }))).toEqual({});
  });

  it('notes windows that never open or cross midnight', () => {
    expect(hoursNote(form({ start: '09:00', end: '09:00' }))).toMatch(/never/);
    expect(hoursNote(form({ start: '22:00', end: '06:00' }))).toMatch(/midnight/);
    expect(hoursNote(form({ start: '08:00', end: '24:00' }))).toBeNull();
  });
});
