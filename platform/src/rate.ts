// NOTIFY_PUBLIC_SEND_RATE and per-key rates: `<count>/<unit>`, e.g. `120/min` (docs/contract.md, "Rate limit"). Shared:
// the gateway enforces rates, auth-svc checks the per-key rates operators set (notifyctl key create|update --rate, the panel).

export interface Rate {
  /** Requests allowed per window. */
  readonly points: number;
  /** Length of the window in seconds. */
  readonly windowSeconds: number;
}

const unitSeconds = new Map([
  ['s', 1],
  ['sec', 1],
  ['second', 1],
  ['m', 60],
  ['min', 60],
  ['minute', 60],
  ['h', 3_600],
  ['hour', 3_600],
  ['d', 86_400],
  ['day', 86_400],
]);

/** Parses `<count>/<unit>`; throws an Error whose message says what is expected (shown in config faults). */
export function parseRate(raw: string): Rate {
  const match = /^\s*(\d{1,9})\s*\/\s*([A-Za-z]+)\s*$/.exec(raw);
  const windowSeconds = match?.[2] === undefined ? undefined : unitSeconds.get(match[2].toLowerCase());
  if (!match || windowSeconds === undefined) {
    throw new Error('must be <count>/<unit> with unit s, sec, second, m, min, minute, h, hour, d or day (for example 120/min)');
  }
  const points = Number(match[1]);
  if (points < 1) throw new Error('must allow at least 1 request per window');
  return { points, windowSeconds };
}
