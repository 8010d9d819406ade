// What a report received means, and the SMTP reply it gets: a DSN or ARF report for a message sent from here, or a
// mailto unsubscribe, applied by dispatch-svc (ReportService) before the reply; anything not for us, forged or
// unreadable refused with a 5xx; a report dispatch-svc cannot apply now deferred with a 4xx, for its sender to retry.
import { type GrpcClient, type Logger, RemoteError } from '@notify/platform';
import { type DataKey, readReturnPath, readUnsubscribeToken } from '@notify/platform/mail';
import type { dispatchProto } from '@notify/proto';
import type { BounceMetrics, ReportKind, ReportOutcome } from './metrics.ts';
import type { Recipient } from './recipient.ts';
import { MalformedReportError, type Report, readReport, readUnsubscribeRequest } from './report.ts';
import type { Intake } from './report-memory.ts';

/** gRPC status codes (grpc.status) this receiver tells apart; the rest mean "try again later". */
const grpcStatus = { INVALID_ARGUMENT: 3, NOT_FOUND: 5 } as const;

export type ReportClient = GrpcClient<typeof dispatchProto.ReportService.service>;

export interface ReportHandlerOptions {
  dataKey: DataKey;
  bounceDomain: string;
  /** Largest report accepted, announced with SIZE. */
  maxBytes: number;
  reports: ReportClient;
  metrics: BounceMetrics;
  logger: Logger;
}

/** An SMTP reply: smtp-server sends `<responseCode> <message>`. */
export class SmtpReply extends Error {
  override name = 'SmtpReply';
  readonly responseCode: number;
  readonly kind: ReportKind;
  readonly outcome: ReportOutcome;
  constructor(responseCode: number, message: string, kind: ReportKind, outcome: ReportOutcome) {
    super(message);
    this.responseCode = responseCode;
    this.kind = kind;
    this.outcome = outcome;
  }
}

interface Handled {
  kind: ReportKind;
  outcome: ReportOutcome;
  messageId?: number;
}

/** What a failed call to dispatch-svc means for the reporting server: refuse for good, or retry later. */
function replyToFailure(error: unknown, kind: ReportKind): SmtpReply {
  if (error instanceof RemoteError && error.status === grpcStatus.NOT_FOUND) return new SmtpReply(550, '5.1.1 No such message', kind, 'refused');
  if (error instanceof RemoteError && error.status === grpcStatus.INVALID_ARGUMENT) return new SmtpReply(550, '5.6.0 Report refused', kind, 'refused');
  // ABORTED report_early (the message is not `sent` yet), UNAVAILABLE, DEADLINE_EXCEEDED, anything else: try again later.
  return new SmtpReply(451, '4.3.0 Cannot apply the report now, try again later', kind, 'deferred');
}

export class ReportHandler {
  readonly #options: ReportHandlerOptions;

  constructor(options: ReportHandlerOptions) {
    this.#options = options;
  }

  /** The reply to a report: recorded and logged, never a rejection (the report's bytes are held until it settles). */
  reply(intake: Intake, recipient: Recipient): Promise<{ error: SmtpReply } | { message: string }> {
    const { metrics, logger } = this.#options;
    return this.#handle(intake, recipient).then(
      (handled) => {
        metrics.record(handled.kind, handled.outcome);
        logger.info({ messageId: handled.messageId, kind: handled.kind, outcome: handled.outcome }, 'report received');
        return { message: `2.0.0 Report ${handled.outcome}` };
      },
      (error: unknown) => {
        const reply = error instanceof SmtpReply ? error : new SmtpReply(451, '4.3.0 Temporary failure, try again later', 'other', 'deferred');
        if (!(error instanceof SmtpReply)) logger.error({ err: error }, 'handling a report failed');
        metrics.record(reply.kind, reply.outcome);
        logger.info({ kind: reply.kind, outcome: reply.outcome, code: reply.responseCode }, 'report not accepted');
        return { error: reply };
      },
    );
  }

  async #handle(intake: Intake, recipient: Recipient): Promise<Handled> {
    if (intake.kind === 'too-large') throw new SmtpReply(552, `5.3.4 Message exceeds the fixed limit of ${this.#options.maxBytes} bytes`, 'other', 'refused');
    if (intake.kind === 'no-room') throw new SmtpReply(451, '4.3.1 Too many reports at once, try again later', 'other', 'deferred');
    return recipient.kind === 'unsubscribe' ? this.#unsubscribe(intake.raw) : this.#report(recipient, intake.raw);
  }

  async #unsubscribe(raw: Buffer): Promise<Handled> {
    const token = readUnsubscribeRequest(raw);
    if (token === undefined || readUnsubscribeToken(this.#options.dataKey, token) === undefined) {
      throw new SmtpReply(550, '5.6.0 No valid unsubscribe token in the Subject', 'unsubscribe', 'refused');
    }
    try {
      const answer = await this.#options.reports.call('Unsubscribe', { token, source: 'mailto', dryRun: false });
      return { kind: 'unsubscribe', outcome: answer.changed ? 'applied' : 'duplicate' };
    } catch (error) {
      throw replyToFailure(error, 'unsubscribe');
    }
  }

  async #report(recipient: Exclude<Recipient, { kind: 'unsubscribe' }>, raw: Buffer): Promise<Handled> {
    const { dataKey, bounceDomain, reports, logger } = this.#options;
    let read: Report;
    try {
      read = readReport(raw);
    } catch (error) {
      if (!(error instanceof MalformedReportError)) throw error;
      throw new SmtpReply(550, `5.6.0 Not a report this server reads: ${error.message}`, error.kind, 'refused');
    }
    const messageId = recipient.kind === 'verp' ? recipient.messageId : read.returnPath && readReturnPath(dataKey, read.returnPath, bounceDomain);
    if (!messageId) throw new SmtpReply(550, '5.6.0 The report names no message sent from here', read.kind, 'refused');
    if (read.effect === 'none') return { kind: read.kind, outcome: 'ignored', messageId };
    const fields =
      read.effect === 'bounce'
        ? { kind: 'bounced', suppression: read.suppression, detail: read.detail, smtpCode: read.smtpCode }
        : { kind: 'complained', suppression: 'complaint', detail: read.detail, smtpCode: 0 };
    try {
      const answer = await reports.call('ApplyReport', { messageId, ...fields, receivedAt: new Date().toISOString() });
      return { kind: read.kind, outcome: answer.changed ? 'applied' : 'duplicate', messageId };
    } catch (error) {
      const reply = replyToFailure(error, read.kind);
      logger.info({ messageId, kind: read.kind, reason: error instanceof RemoteError ? error.reason : 'unexpected' }, 'report not applied');
      throw reply;
    }
  }
}
