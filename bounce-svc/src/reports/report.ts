// Reading what a report says: a DSN (RFC 3464, multipart/report; report-type=delivery-status) or a feedback-loop
// complaint (ARF, RFC 5965, multipart/report; report-type=feedback-report). Pure: the receiver decides what to do.
// Only three pieces of a report are read: its header block, its machine-readable part and the header block of the
// original it quotes. The rest, however large, is skipped over without being decoded, so a report costs
// milliseconds and a few hundred KiB at most.
import { isHardBounceStatus, statusCode } from './enhanced-status.ts';
import {
  decodedBody,
  decodeEncodedWords,
  type Fields,
  fieldGroups,
  type MimePart,
  maxHeaderBytes,
  multipartParts,
  parseContentType,
  readEntity,
  readMessageHeader,
} from './mime.ts';

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
/** RFC 6522 has two or three parts to a report; past this many it is not one (and is not split further). */
export const maxReportParts = 100;
/** The machine-readable part is a few fields per recipient; a larger one is refused rather than read. */
const maxMachinePartBytes = 64 * 1024;
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
  const address = (typed ? typed[1]! : value)
    .trim()
    .replace(/^<(.*)>$/, '$1')
    .trim();
  return address === '' ? undefined : address;
}

/**
 * The Return-Path of the enclosed original message: the VERP address it was sent with. Only the start of the original
 * is decoded, enough for its header block.
 */
function originalReturnPath(parts: readonly MimePart[]): string | undefined {
  const original = parts.find((part) => originalTypes.has(part.type));
  return original && bareAddress(readEntity(decodedBody(original, maxHeaderBytes))?.headers.get('return-path'));
}

function machinePart(parts: readonly MimePart[], type: string, kind: 'dsn' | 'arf'): Fields[] {
  const part = parts.find((candidate) => candidate.type === type);
  if (!part) throw new MalformedReportError(`the report has no ${type} part`, kind);
  if (part.content.length > maxMachinePartBytes) throw new MalformedReportError(`the ${type} part is over ${maxMachinePartBytes} bytes`, kind);
  const groups = fieldGroups(decodedBody(part, maxMachinePartBytes).toString('utf8'));
  if (!groups || groups.length === 0) throw new MalformedReportError(`the ${type} part cannot be read`, kind);
  return groups;
}

function readDsn(parts: readonly MimePart[]): Report {
  // The first group is about the message (Reporting-MTA is required), the others one per recipient (Action, Status).
  const [perMessage, ...recipients] = machinePart(parts, 'message/delivery-status', 'dsn');
  if (!perMessage!.has('reporting-mta') || recipients.length === 0)
    throw new MalformedReportError('the delivery status has no Reporting-MTA or no recipient', 'dsn');
  const returnPath = originalReturnPath(parts);
  const read = recipients.map((fields) => {
    const action = fields.get('action')?.toLowerCase();
    const status = statusCode(fields.get('status') ?? '');
    if (!action || !status || !fields.has('final-recipient'))
      throw new MalformedReportError('a recipient of the delivery status lacks Final-Recipient, Action or Status', 'dsn');
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
  if (!feedbackType || !userAgent || !fields!.has('version'))
    throw new MalformedReportError('the feedback report lacks Feedback-Type, User-Agent or Version', 'arf');
  const returnPath = originalReturnPath(parts) ?? bareAddress(fields!.get('original-mail-from'));
  if (noticeTypes.has(feedbackType)) return { kind: 'arf', effect: 'none', feedbackType, returnPath };
  if (!complaintTypes.has(feedbackType)) throw new MalformedReportError(`unknown Feedback-Type ${oneLine(feedbackType).slice(0, 40)}`, 'arf');
  return { kind: 'arf', effect: 'complaint', detail: oneLine(`${feedbackType} (${userAgent})`), returnPath };
}

const reportKinds: ReadonlyMap<string, 'dsn' | 'arf'> = new Map([
  ['delivery-status', 'dsn'],
  ['feedback-report', 'arf'],
]);

/** Reads a report; throws MalformedReportError for anything that is not a readable DSN or ARF report. */
export function readReport(raw: Buffer): Report {
  const { headers, bodyStart } = readMessageHeader(raw);
  const contentType = parseContentType(headers.get('content-type'));
  if (contentType.type !== 'multipart/report') throw new MalformedReportError('not a multipart/report');
  const kind = reportKinds.get(contentType.params.get('report-type')?.toLowerCase() ?? '');
  if (!kind) throw new MalformedReportError('a report-type other than delivery-status or feedback-report');
  const boundary = contentType.params.get('boundary');
  if (!boundary) throw new MalformedReportError('the multipart/report has no boundary', kind);
  const split = multipartParts(raw.subarray(bodyStart), boundary, maxReportParts);
  if ('fault' in split) throw new MalformedReportError(`the multipart/report cannot be split into its parts: ${split.fault}`, kind);
  return kind === 'dsn' ? readDsn(split.parts) : readArf(split.parts);
}

/** The unsubscribe token of a mailto unsubscribe (Subject `unsubscribe <token>`), or undefined. */
export function readUnsubscribeRequest(raw: Buffer): string | undefined {
  const subject = readMessageHeader(raw).headers.get('subject');
  return subject === undefined ? undefined : /^\s*unsubscribe\s+([A-Za-z0-9_-]{1,2048})\s*$/i.exec(decodeEncodedWords(subject))?.[1];
}
