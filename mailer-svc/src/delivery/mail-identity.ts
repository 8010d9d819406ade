// Who the mail is from (the job's `from` when its send named one, else MAIL_FROM), and the Message-ID each message
// carries: derived from the message id, so every retry of one message carries the same Message-ID and receivers can
// recognise a duplicate delivery.
import type { JobSender } from '@notify/proto';
import addressparser from 'nodemailer/lib/addressparser';

export interface Sender {
  name: string;
  address: string;
  /** Domain of the address; it also names the Message-ID's right-hand side. */
  domain: string;
}

/** Parses MAIL_FROM (`Name <address@domain>` or a bare address); throws a readable Error when it is not one mailbox. */
export function parseSender(raw: string): Sender {
  if (/[\r\n]/.test(raw)) throw new Error('must not contain line breaks');
  const parsed = addressparser(raw, { flatten: true });
  const first = parsed[0];
  if (parsed.length !== 1 || !first?.address) throw new Error('must be exactly one mailbox, such as "Notify <no-reply@example.com>"');
  const at = first.address.lastIndexOf('@');
  const domain = first.address.slice(at + 1);
  if (at < 1 || !/^[a-z0-9.-]+$/i.test(domain)) throw new Error('must be an address with a domain');
  return { name: first.name, address: first.address, domain: domain.toLowerCase() };
}

/**
 * The sender a job names: an address on a verified sending domain of its organization, checked by the send path
 * (dispatch-svc) and again as the job is read (proto/src/messaging.ts), so only its domain is derived here.
 */
export function jobSender(from: JobSender): Sender {
  return { name: from.name, address: from.address, domain: from.address.slice(from.address.lastIndexOf('@') + 1).toLowerCase() };
}

export function messageIdFor(messageId: number, sender: Sender): string {
  return `<notify-${messageId}@${sender.domain}>`;
}
