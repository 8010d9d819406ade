// How long messages are kept (docs/operations.md, "Retention"): NOTIFY_MESSAGE_RETENTION and an organization's own
// override are both written `<N>d` or `<N>h`, and held as whole hours (what organizations.message_retention_hours stores).
/** Ten years: long enough for any policy, short enough that the purge's cutoff stays a plain timestamp. */
const maxRetentionHours = 87_600;

/** Parses `30d` or `36h` into hours; throws an Error with a readable message otherwise. */
export function parseRetention(raw: string): number {
  const match = /^\s*(\d{1,6})\s*([dh])\s*$/.exec(raw);
  if (!match) throw new Error('must be a number of days or hours, such as 30d or 36h');
  const hours = Number(match[1]) * (match[2] === 'd' ? 24 : 1);
  if (hours < 1) throw new Error('must be at least 1h');
  if (hours > maxRetentionHours) throw new Error(`must be at most ${maxRetentionHours / 24}d`);
  return hours;
}

/** Hours back in the form they are written: whole days as `<N>d`, anything else as `<N>h`. */
export function formatRetention(hours: number): string {
  return hours % 24 === 0 ? `${hours / 24}d` : `${hours}h`;
}
