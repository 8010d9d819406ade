// Reading what a report says: a DSN (RFC 3464, multipart/report; report-type=delivery-status) or a feedback-loop
// complaint (ARF, RFC 5965, multipart/report; report-type=feedback-report). Pure: the receiver decides what to do.
import { simpleParser } from 'mailparser';
import { isHardBounceStatus, statusCode } from './enhanced-status.ts';
import { fieldGroups, headerFields, multipartParts, type Fields, type MimePart } from './mime.ts';

/** Thrown when a mail is not a report this service reads, or its machine-readable part cannot be read. */
export class MalformedReportError extends Error {
  override name = 'MalformedReportError';
  /** Which kind of report it claimed to be, for the metrics. */
  readonly kind: 'dsn' | 'arf' | 'other';
  constructor(message: string, kind: 'dsn' | 'arf' | 'other' = 'other') {
    super(message);
    this.kind = kind;
  }
}

export type Report =
  /** A DSN saying delivery failed for good. */
  | { kind: 'dsn'; effect: 'bounce'; suppression: '' | 'hard_bounce'; detail: string; smtpCode: number; returnPath: string | undefined }
  /** A DSN about a delay, a delivery or a relay: nothing to change. */
  | { kind: 'dsn'; effect: 'none'; action: string; returnPath: string | undefined }
  | { kind: 'arf'; effect: 'complaint'; detail: string; returnPath: string | undefined }
  /** not-spam, or an authentication-failure report: nothing to change. */
  | { kind: 'arf'; effect: 'none'; feedbackType: string; returnPath: string | undefined };

const maxDetailLength = 1_000;
const complaintTypes = new Set(['abuse', 'fraud', 'virus', 'other']);
const noticeTypes = new Set(['not-spam', 'auth-failure']);
const informativeActions = new Set(['delayed', 'delivered', 'relayed', 'expanded']);
/** Parts that carry the original message or its headers (RFC 3464 section 2, RFC 5965 section 2). */
const originalTypes = new Set(['message/rfc822', 'text/rfc822-headers', 'message/rfc822-headers', 'message/global', 'message/global-headers']);

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, maxDetailLength);
}

/** `rfc822; a@b` / `<a@b>` / `a@b` → `a@b`; undefined when empty (`<>`, a null return path). */
function bareAddress(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const typed = /^[A-Za-z0-9-]+\s*;(.*)$/.exec(value);
  const address = (typed ? typed[1]! : value).trim().replace(/^<(.*)>$/, '$1').trim();
  return address === '' ? undefined : address;
}

/** The Return-Path of the enclosed original message: the VERP address it was sent with. */
function originalReturnPath(parts: readonly MimePart[]): string | undefined {
  const original = parts.find((part) => originalTypes.has(part.type));
  return original && bareAddress(headerFields(original.body)?.get('return-path'));
}

function machinePart(parts: readonly MimePart[], type: string, kind: 'dsn' | 'arf'): Fields[] {
  const part = parts.find((candidate) => candidate.type === type);
  if (!part) throw new MalformedReportError(`the report has no ${type} part`, kind);
  const groups = fieldGroups(part.body);
  if (!groups || groups.length === 0) throw new MalformedReportError(`the ${type} part cannot be read`, kind);
  return groups;
}

function readDsn(parts: readonly MimePart[]): Report {
  // The first group is about the message (Reporting-MTA is required), the others one per recipient (Action, Status).
  const [perMessage, ...recipients] = machinePart(parts, 'message/delivery-status', 'dsn');
  if (!perMessage!.has('reporting-mta') || recipients.length === 0) throw new MalformedReportError('the delivery status has no Reporting-MTA or no recipient', 'dsn');
  const returnPath = originalReturnPath(parts);
  const read = recipients.map((fields) => {
    const action = fields.get('action')?.toLowerCase();
    const status = statusCode(fields.get('status') ?? '');
    if (!action || !status || !fields.has('final-recipient')) throw new MalformedReportError('a recipient of the delivery status lacks Final-Recipient, Action or Status', 'dsn');
    return { action, status, diagnostic: fields.get('diagnostic-code') };
  });
  // Notify sends one recipient per message, so one failed recipient is the message's bounce.
  const failed = read.find((recipient) => recipient.action === 'failed');
  if (!failed) {
    const unknown = read.find((recipient) => !informativeActions.has(recipient.action));
    if (unknown) throw new MalformedReportError(`unknown Action ${oneLine(unknown.action).slice(0, 40)}`, 'dsn');
    return { kind: 'dsn', effect: 'none', action: read[0]!.action, returnPath };
  }
  // `smtp; 550 5.1.1 <a@b>... User unknown`: the reply code when the diagnostic is an SMTP one.
  const diagnostic = failed.diagnostic === undefined ? '' : oneLine(failed.diagnostic.replace(/^[A-Za-z0-9-]+\s*;\s*/, ''));
  const smtp = failed.diagnostic && /^smtp\s*;\s*([2-5]\d\d)(?:[ -]|$)/i.exec(failed.diagnostic.trim());
  return {
    kind: 'dsn',
    effect: 'bounce',
    suppression: isHardBounceStatus(failed.status) ? 'hard_bounce' : '',
    detail: oneLine(`${failed.status} ${diagnostic}`),
    smtpCode: smtp ? Number(smtp[1]) : 0,
    returnPath,
  };
}

function readArf(parts: readonly MimePart[]): Report {
  const [fields] = machinePart(parts, 'message/feedback-report', 'arf');
  const feedbackType = fields!.get('feedback-type')?.toLowerCase();
  const userAgent = fields!.get('user-agent');
  if (!feedbackType || !userAgent || !fields!.has('version')) throw new MalformedReportError('the feedback report lacks Feedback-Type, User-Agent or Version', 'arf');
  const returnPath = originalReturnPath(parts) ?? bareAddress(fields!.get('original-mail-from'));
  if (noticeTypes.has(feedbackType)) return { kind: 'arf', effect: 'none', feedbackType, returnPath };
  if (!complaintTypes.has(feedbackType)) throw new MalformedReportError(`unknown Feedback-Type ${oneLine(feedbackType).slice(0, 40)}`, 'arf');
  return { kind: 'arf', effect: 'complaint', detail: oneLine(`${feedbackType} (${userAgent})`), returnPath };
}

/** Reads a report; throws MalformedReportError for anything that is not a readable DSN or ARF report. */
export async function readReport(raw: Buffer): Promise<Report> {
  const parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  const contentType = parsed.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  if (contentType?.value?.toLowerCase() !== 'multipart/report') throw new MalformedReportError('not a multipart/report');
  const reportType = contentType.params?.['report-type']?.toLowerCase();
  const boundary = contentType.params?.['boundary'];
  if (!boundary) throw new MalformedReportError('the multipart/report has no boundary');
  const parts = multipartParts(raw.toString('latin1'), boundary);
  if (!parts) throw new MalformedReportError('the multipart/report cannot be split into its parts');
  if (reportType === 'delivery-status') return readDsn(parts);
  if (reportType === 'feedback-report') return readArf(parts);
  throw new MalformedReportError('a report-type other than delivery-status or feedback-report');
}

/** The unsubscribe token of a mailto unsubscribe (Subject `unsubscribe <token>`), or undefined. */
export async function readUnsubscribeRequest(raw: Buffer): Promise<string | undefined> {
  const parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  return /^\s*unsubscribe\s+([A-Za-z0-9_-]{1,2048})\s*$/i.exec(parsed.subject ?? '')?.[1];
}
