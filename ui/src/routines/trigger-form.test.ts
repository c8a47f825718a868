// The trigger picker's draft is issue 33's one shape: a file trigger with its paths, a check
// with its condition, notify; switching back to the schedule says so; a file trigger with no
// path is caught before saving.
import { describe, expect, it } from 'vitest';
import { checkTrigger, triggerDraft, triggerFormFrom } from './trigger-form';

describe('the trigger picker', () => {
  it('sends a file trigger with its paths, the check and the action', () => {
    const t = { ...triggerFormFrom(null), kind: 'file' as const, paths: 'notes/*.md\n logs/ ', check_command: 'grep -c ERROR logs/app.log', check_when: '> 0', action: 'notify' as const };
    expect(checkTrigger(t)).toBeNull();
    expect(triggerDraft(t, null)).toEqual({
      action: 'notify',
      trigger: { kind: 'file', paths: ['notes/*.md', 'logs/'] },
      check: { command: 'grep -c ERROR logs/app.log', when: '> 0' },
    });
  });

  it('catches a file trigger without paths and a URL that is not one', () => {
    expect(checkTrigger({ ...triggerFormFrom(null), kind: 'file' })).toContain('Name the files');
    expect(checkTrigger({ ...triggerFormFrom(null), kind: 'url', url: 'example.com' })).toContain('https://');
  });
});
