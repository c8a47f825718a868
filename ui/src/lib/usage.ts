// Tokens and cost in words, for the places background work's usage is shown: the routine's
// run history, the heartbeat's card in the status bar and Settings → Health. Pure.
import type { Usage } from './protocol';

const COUNT = new Intl.NumberFormat('en-US');

/** `1,234`. */
export function count(n: number): string {
  return COUNT.format(n);
}

/** What the provider charged, from millionths of a dollar: `$0.0004`, `$1.25`. */
export function costText(microUsd: number): string {
  const dollars = microUsd / 1_000_000;
  if (dollars >= 0.01) return `$${dollars.toFixed(2)}`;
  if (dollars >= 0.0001) return `$${dollars.toFixed(4)}`;
  return '<$0.0001';
}

/** `3,250 tokens (2,900 cached) · $0.0004`: the cached part and the cost only when there are some. */
export function tokensText(u: Usage): string {
  const cached = u.cache_read_tokens ?? 0;
  let text = `${count(u.input_tokens + u.output_tokens)} tokens`;
  if (cached > 0) text += ` (${count(cached)} cached)`;
  if ((u.cost_micro_usd ?? 0) > 0) text += ` · ${costText(u.cost_micro_usd ?? 0)}`;
  return text;
}
