// Which of our addresses a report was sent to (RCPT TO), decided before the report is read: anything that is not one
// of them is refused at once, so a mail that is not for us costs no parsing and changes nothing.
import { type DataKey, readReturnPath } from '@notify/platform/mail';

export type Recipient =
  /** `bounces+<token>@`: a VERP return path whose signature verified; the report is about this message. */
  | { kind: 'verp'; messageId: number }
  /** `bounces@` or `fbl@` (the address feedback loops are registered with): the report names the message itself. */
  | { kind: 'feedback' }
  /** `unsubscribe@`: a mailto unsubscribe (RFC 2369 List-Unsubscribe) carrying the token in its Subject. */
  | { kind: 'unsubscribe' };

const plainReportLocals = new Set(['bounces', 'fbl']);

/** The recipient, or undefined for another domain, another local part, or a token that does not verify. */
export function readRecipient(key: DataKey, address: string, bounceDomain: string): Recipient | undefined {
  const at = address.lastIndexOf('@');
  if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain.toLowerCase()) return undefined;
  const local = address.slice(0, at).toLowerCase();
  if (plainReportLocals.has(local)) return { kind: 'feedback' };
  if (local === 'unsubscribe') return { kind: 'unsubscribe' };
  const messageId = readReturnPath(key, address, bounceDomain);
  return messageId === undefined ? undefined : { kind: 'verp', messageId };
}
