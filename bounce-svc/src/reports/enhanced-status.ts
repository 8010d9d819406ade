// RFC 3463 enhanced status codes, read the way mailer-svc reads a relay's reply (mailer-svc/src/delivery/smtp-outcome.ts
// isHardBounce): a report about the address itself suppresses it, any other failure does not. Keep the two identical.

/** The status code a DSN Status field starts with (`5.1.1 (user unknown)` → `5.1.1`), if it is one. */
export function statusCode(field: string): string | undefined {
  return /^([245]\.\d{1,3}\.\d{1,3})(?:\s|\(|$)/.exec(field.trim())?.[1];
}

/**
 * A hard bounce: a permanent failure (5.x.x) whose subject is the destination address (5.1.x: no such mailbox, bad
 * destination system, ...). 5.1.7 and 5.1.8 are about the sender's address, and other permanent failures (policy,
 * content, size, mailbox full) say nothing about whether the address exists: neither suppresses.
 */
export function isHardBounceStatus(status: string): boolean {
  return status.startsWith('5.1.') && status !== '5.1.7' && status !== '5.1.8';
}
