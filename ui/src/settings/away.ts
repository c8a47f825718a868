// Settings → Away, pure: the channels view as lines of plain words, the pairing code's
// countdown, and the form ↔ settings mapping (tokens are never part of either: they go in
// once, to the keyring, and only "stored" comes back).
import type {
  ChannelKinds,
  ChannelStatus,
  ChannelView,
  ChannelWhen,
  ChannelsSettings,
  PairingView,
} from '../lib/protocol';

export const STATUS_TEXT: Record<ChannelStatus, string> = {
  off: 'Off',
  needs_setup: 'Needs setup',
  connecting: 'Connecting…',
  connected: 'Connected',
  retrying: 'Retrying',
};

export const WHEN_TEXT: Record<ChannelWhen, string> = {
  away: 'When I am away',
  always: 'Always',
  never: 'Never (the desktop only)',
};

/** The kinds of event, in the order Settings lists them, with what each covers. */
export const KINDS: { key: keyof ChannelKinds; label: string }[] = [
  { key: 'approval', label: 'An approval waiting' },
  { key: 'continuation', label: 'An answer given on its own, a command finished' },
  { key: 'routine', label: 'A routine’s result (its schedule or you ran it)' },
  { key: 'monitor', label: 'A monitor fired (a watched file, output, URL or webhook), or the heartbeat found something' },
  { key: 'failure', label: 'A failure, or anything else' },
  { key: 'budget', label: 'The day’s background budget spent' },
];

/** A kind's choice in the form: its own "when", or `default` (the choice above). */
export type KindChoice = ChannelWhen | 'default';

export const CHANNEL_NAME: Record<ChannelView['channel'], string> = { ntfy: 'ntfy', telegram: 'Telegram' };

/** "Connected · 3 sent · 1 waiting", and what keeps it from working. */
export function channelLine(c: ChannelView): string {
  const parts = [STATUS_TEXT[c.status]];
  if (c.status === 'off') return parts[0];
  if (!c.has_token && c.channel === 'telegram') parts.push('no bot token stored');
  if (c.sent > 0) parts.push(`${c.sent} sent`);
  if (c.queued > 0) parts.push(`${c.queued} waiting`);
  parts.push(c.answers ? 'answers approvals' : 'no answers from here');
  return parts.join(' · ');
}

/** "Send K7M2QX9P to your bot within 9 min (5 tries left)." */
export function pairingText(p: PairingView, nowMs: number): string {
  const min = Math.max(0, Math.ceil((p.expires_at - nowMs) / 60_000));
  return `Send ${p.code} to your bot within ${min} min (${p.tries_left} ${p.tries_left === 1 ? 'try' : 'tries'} left).`;
}

export interface AwayForm {
  ntfyServer: string;
  ntfyTopic: string;
  ntfyReplyTopic: string;
  telegramOn: boolean;
  telegramApi: string;
  when: ChannelWhen;
  kinds: Record<keyof ChannelKinds, KindChoice>;
}

export function formFrom(s: ChannelsSettings): AwayForm {
  return {
    ntfyServer: s.ntfy?.server ?? '',
    ntfyTopic: s.ntfy?.topic ?? '',
    ntfyReplyTopic: s.ntfy?.reply_topic ?? '',
    telegramOn: s.telegram !== undefined && s.telegram !== null,
    telegramApi: s.telegram?.api_base ?? 'https://api.telegram.org',
    when: s.when,
    kinds: Object.fromEntries(KINDS.map(({ key }) => [key, s.kinds?.[key] ?? 'default'])) as AwayForm['kinds'],
  };
}

/** The settings the form describes, keeping what it does not show (the chat, its conversation). */
export function settingsFrom(f: AwayForm, prev: ChannelsSettings): ChannelsSettings {
  const trimmed = (v: string): string | undefined => (v.trim() === '' ? undefined : v.trim());
  const server = trimmed(f.ntfyServer);
  return {
    ...prev,
    ntfy: server ? { server, topic: trimmed(f.ntfyTopic), reply_topic: trimmed(f.ntfyReplyTopic) } : undefined,
    telegram: f.telegramOn
      ? {
          api_base: trimmed(f.telegramApi) ?? 'https://api.telegram.org',
          chat_id: prev.telegram?.chat_id,
          session_id: prev.telegram?.session_id,
        }
      : undefined,
    when: f.when,
    kinds: Object.fromEntries(
      KINDS.map(({ key }) => [key, f.kinds[key]]).filter(([, choice]) => choice !== 'default'),
    ) as ChannelKinds,
  };
}
