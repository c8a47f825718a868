import { describe, expect, it } from 'vitest';
import { channelLine, formFrom, pairingText, settingsFrom } from './away';
import type { ChannelView, ChannelsSettings } from '../lib/protocol';

const telegram: ChannelView = {
  channel: 'telegram',
  status: 'connected',
  has_token: true,
  queued: 1,
  sent: 3,
  answers: true,
  sends: '',
};

describe('Settings → Away', () => {
  it('says how a channel is doing in one line', () => {
    expect(channelLine(telegram)).toBe('Connected · 3 sent · 1 waiting · answers approvals');
    expect(channelLine({ ...telegram, status: 'needs_setup', has_token: false, sent: 0, queued: 0, answers: false })).toBe(
      'Needs setup · no bot token stored · no answers from here',
    );
    expect(channelLine({ ...telegram, status: 'off' })).toBe('Off');
  });

  it('counts the pairing code down in minutes and tries', () => {
    expect(pairingText({ code: 'K7M2QX9P', expires_at: 600_000, tries_left: 1 }, 30_000)).toBe(
      'Send K7M2QX9P to your bot within 10 min (1 try left).',
    );
  });

  it('keeps the paired chat the form does not show, and each kind its own choice', () => {
    const prev: ChannelsSettings = {
      telegram: { api_base: 'https://api.telegram.org', chat_id: 42 },
      when: 'away',
      kinds: { routine: 'never' },
    };
    const form = { ...formFrom(prev), ntfyServer: ' https://ntfy.example.org ', when: 'always' as const };
    expect(settingsFrom(form, prev)).toEqual({
      ntfy: { server: 'https://ntfy.example.org', topic: undefined, reply_topic: undefined },
      telegram: { api_base: 'https://api.telegram.org', chat_id: 42, session_id: undefined },
      when: 'always',
      kinds: { routine: 'never' },
    });
    expect(settingsFrom({ ...form, telegramOn: false, ntfyServer: '' }, prev).telegram).toBeUndefined();
  });

  it('shows each kind of event with its own choice or the default, and saves only the ones set', () => {
    const prev: ChannelsSettings = { when: 'away', kinds: { routine: 'never', budget: 'always' } };
    const form = formFrom(prev);
    expect(form.kinds).toEqual({
      approval: 'default',
      continuation: 'default',
      routine: 'never',
      monitor: 'default',
      failure: 'default',
      budget: 'always',
    });
    form.kinds.approval = 'always';
    form.kinds.routine = 'default';
    expect(settingsFrom(form, prev).kinds).toEqual({ approval: 'always', budget: 'always' });
  });
});
