// The `?mock` backend's phone channels, after vigil-core `channels/`: ntfy connected, a
// Telegram bot waiting to be paired, and Settings → Away's ops working on them in memory
// (pairing completes when the code is shown, as if the phone sent it at once). Only
// `mock.ts` imports this.

import type { ChannelOp, ChannelsView, Event } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

export function createMockChannels(emit: Emit) {
  const view: ChannelsView = {
    settings: {
      ntfy: { server: 'https://ntfy.example.org' },
      telegram: { api_base: 'https://api.telegram.org' },
      when: 'away',
      kinds: {},
    },
    channels: [
      {
        channel: 'ntfy',
        status: 'connected',
        has_token: true,
        queued: 0,
        sent: 4,
        answers: true,
        sends: 'A title and one short line per event, and Allow once / Deny buttons on private topics.',
      },
      {
        channel: 'telegram',
        status: 'needs_setup',
        has_token: true,
        queued: 0,
        sent: 0,
        answers: false,
        sends: 'The same pushes with buttons, and the replies of the conversation you write to.',
      },
    ],
    ntfy_topic: 'vigil-3f9c0a61d2b84e7f9a1c5b2e8d4f6a07',
    ntfy_reply_topic: 'vigil-b1e7d2c94f0a4c3e8b5d6f7a9c0e1d2b',
    presence_known: true,
    refused_answers: 0,
    ignored_chats: 0,
  };

  function op(o: ChannelOp): void {
    switch (o.action) {
      case 'set':
        view.settings = o.settings;
        break;
      case 'pair':
        view.pairing = { code: 'K7M2QX9P', expires_at: Date.now() + 600_000, tries_left: 5 };
        break;
      case 'unpair':
        view.paired_chat = undefined;
        view.channels[1].status = 'needs_setup';
        break;
      case 'set_token':
        view.channels.find((c) => c.channel === o.channel)!.has_token = o.token !== '';
        break;
      case 'get':
        break;
    }
    emit(null, null, { type: 'channels_changed', channels: structuredClone(view) });
  }

  return { op };
}
