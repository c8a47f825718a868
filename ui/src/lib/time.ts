// Times and dates in the user's locale, through formatters made once. `toLocaleTimeString`
// with options builds a new Intl.DateTimeFormat on every call, which WebKit makes costly:
// one per message was a large share of rendering a long conversation at start-up.

const TIME = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
const DAY = new Intl.DateTimeFormat([], { month: 'short', day: 'numeric' });
const DAY_YEAR = new Intl.DateTimeFormat([], { year: 'numeric', month: 'short', day: 'numeric' });

/** `12:30` (or `12:30 PM`), in the user's locale. */
export function shortTime(ms: number): string {
  return TIME.format(ms);
}

/** `Mar 12`, or `Mar 12, 2025` with the year. */
export function shortDate(ms: number, withYear = false): string {
  return (withYear ? DAY_YEAR : DAY).format(ms);
}
