// What an SMTP send attempt means for the message: accepted, worth retrying later, or refused for good.
// Only a 5xx answer to the message's own envelope or content is permanent; a relay that refuses us (greeting, EHLO,
// AUTH) or cannot be reached is an operator problem, so the message waits for it to be fixed instead of failing.

export type DeliveryOutcome =
  | { kind: 'accepted'; smtpCode?: number; smtpResponse: string }
  | { kind: 'temporary'; reason: string; smtpCode?: number; smtpResponse?: string }
  | { kind: 'permanent'; reason: string; smtpCode?: number; smtpResponse?: string };

/** The fields nodemailer puts on a failed send. */
interface SmtpErrorFields {
  code?: unknown;
  /** The system error behind a nodemailer code, such as ECONNREFUSED behind ESOCKET. */
  originalCode?: unknown;
  responseCode?: unknown;
  response?: unknown;
  command?: unknown;
}

const maxResponseLength = 1_000;

/** One line, bounded: relays answer in several continuation lines, and the text is stored with the message. */
export function normalizeResponse(response: string): string {
  return response.replace(/\s+/g, ' ').trim().slice(0, maxResponseLength);
}

/** The RFC 3463 enhanced status code a reply starts with (`550 5.1.1 No such user` → `5.1.1`), if it has one. */
export function enhancedStatus(response: string | undefined): string | undefined {
  return response === undefined ? undefined : /^[245]\d\d[ -]([245]\.\d{1,3}\.\d{1,3})(?:\s|$)/.exec(response)?.[1];
}

function replyCode(response: string): number | undefined {
  const match = /^([2-5]\d\d)[ -]/.exec(response);
  return match ? Number(match[1]) : undefined;
}

export function acceptedOutcome(response: string): DeliveryOutcome {
  const smtpResponse = normalizeResponse(response);
  const smtpCode = replyCode(smtpResponse);
  return smtpCode === undefined ? { kind: 'accepted', smtpResponse } : { kind: 'accepted', smtpCode, smtpResponse };
}

/** What the relay was refusing, by the SMTP command it answered. */
function refusedPart(command: string): string {
  if (command === 'RCPT TO') return 'recipient refused by the mail server';
  if (command === 'MAIL FROM') return 'sender refused by the mail server';
  if (command === 'DATA') return 'message refused by the mail server';
  return 'mail server refused the connection';
}

const messageCommands = new Set(['MAIL FROM', 'RCPT TO', 'DATA']);
/** Errors without a reply code that are about the message itself, so retrying cannot help. */
const messageFaults = new Set(['EENVELOPE', 'EMESSAGE', 'EMAXRECIPIENTS', 'EREQUIRETLS']);

export function classifySendError(error: unknown): DeliveryOutcome {
  const fields: SmtpErrorFields = typeof error === 'object' && error !== null ? (error as SmtpErrorFields) : {};
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const command = typeof fields.command === 'string' ? fields.command : '';
  const response = typeof fields.response === 'string' ? normalizeResponse(fields.response) : undefined;
  const smtpCode = typeof fields.responseCode === 'number' ? fields.responseCode : response ? replyCode(response) : undefined;

  if (smtpCode !== undefined && smtpCode >= 400 && smtpCode <= 599) {
    const smtp = { smtpCode, ...(response === undefined ? {} : { smtpResponse: response }) };
    const reason = `${refusedPart(command)}: ${response ?? smtpCode}`;
    const permanent = smtpCode >= 500 && messageCommands.has(command);
    return permanent ? { kind: 'permanent', reason, ...smtp } : { kind: 'temporary', reason, ...smtp };
  }
  if (code !== undefined && messageFaults.has(code)) {
    return { kind: 'permanent', reason: `message not sendable: ${error instanceof Error ? error.message : code}` };
  }
  // Connection, DNS, TLS, timeout and protocol trouble. The error text can name internal hosts, so only the code is kept.
  const cause = typeof fields.originalCode === 'string' ? fields.originalCode : code;
  if (cause === 'ETIMEDOUT') return { kind: 'temporary', reason: 'mail server timed out (ETIMEDOUT)' };
  return { kind: 'temporary', reason: `mail server unreachable (${cause ?? 'unknown error'})` };
}

/**
 * A hard bounce: the relay refused the recipient for good, a 5xx whose RFC 3463 enhanced status is about the
 * destination address (5.1.x: no such mailbox, bad destination system, ...). 5.1.7 and 5.1.8 are about the sender's
 * address, and other 5xx (policy, content, size) say nothing about whether the address exists: neither suppresses.
 */
export function isHardBounce(outcome: DeliveryOutcome): boolean {
  if (outcome.kind !== 'permanent' || outcome.smtpCode === undefined || outcome.smtpCode < 500) return false;
  const status = enhancedStatus(outcome.smtpResponse);
  return status?.startsWith('5.1.') === true && status !== '5.1.7' && status !== '5.1.8';
}
