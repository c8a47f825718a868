import { describe, expect, it } from 'vitest';
import { checksStatus } from './checks';

const base = { text: '', exists: true, effectively_empty: false, path: '/w/HEARTBEAT.md' };

describe('checksStatus', () => {
  it('says interval heartbeats skip the model when the checks are effectively empty', () => {
    const s = checksStatus({ ...base, text: '# Checks\n<!-- none -->\n', effectively_empty: true });
    expect(s.tone).toBe('idle');
    expect(s.text).toMatch(/skip the model call/);
    expect(s.text).toMatch(/routines still run/);
  });

  it('tells a user without the file that interval heartbeats cost nothing', () => {
    const s = checksStatus({ ...base, exists: false, effectively_empty: true });
    expect(s.tone).toBe('idle');
    expect(s.text).toMatch(/no HEARTBEAT\.md: interval heartbeats skip the model call/);
  });

  it('confirms real checks are read on every heartbeat', () => {
    const s = checksStatus({ ...base, text: '- is the backup fresh?\n' });
    expect(s).toEqual({ tone: 'ok', text: expect.stringMatching(/Every heartbeat reads these checks/) });
  });

  it('while HEARTBEAT.md is held, promises neither its checks nor its routines', () => {
    for (const checks of [{ ...base, text: '- is the backup fresh?\n' }, { ...base, effectively_empty: true }]) {
      const s = checksStatus(checks, true);
      expect(s.tone).toBe('idle');
      expect(s.text).toMatch(/Until you trust HEARTBEAT\.md/);
      expect(s.text).not.toMatch(/still run|Every heartbeat reads/);
    }
  });
});
