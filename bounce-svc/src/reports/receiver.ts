// The SMTP listener reports arrive on (the bounce domain's MX). A report is answered 250 only after dispatch-svc has
// applied it: until then the reporting server keeps it and retries on a 4xx, which is what makes reports durable
// without a queue of our own. Anything not for us, forged or unreadable is refused with a 5xx and changes nothing.
// Anyone may connect, so every resource a client can make it spend is bounded (ReceiverLimits).
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { listenOn, RemoteError, type GrpcClient, type Logger } from '@notify/platform';
import { readReturnPath, readUnsubscribeToken, type DataKey } from '@notify/platform/mail';
import type { dispatchProto } from '@notify/proto';
import type { BounceMetrics, ReportKind, ReportOutcome } from './metrics.ts';
import { readRecipient, type Recipient } from './recipient.ts';
import { MalformedReportError, readReport, readUnsubscribeRequest } from './report.ts';
import { ReportMemory, type Intake } from './report-memory.ts';
import { SessionLimits, type SessionLimitOptions } from './session-limits.ts';

/** gRPC status codes (grpc.status) this receiver tells apart; the rest mean "try again later". */
const grpcStatus = { INVALID_ARGUMENT: 3, NOT_FOUND: 5 } as const;

export type ReportClient = GrpcClient<typeof dispatchProto.ReportService.service>;

/** What one replica lets its clients take (BOUNCE_MAX_CLIENTS, BOUNCE_SESSION_TIMEOUT, ... in config.ts). */
export interface ReceiverLimits extends SessionLimitOptions {
  /** Connections open at once; past it a new one is answered 421 and closed. */
  maxClients: number;
  /** Bytes of reports held in memory at once, all sessions together (at least maxBytes). */
  maxHeldBytes: number;
}

export interface ReceiverOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  dataKey: DataKey;
  bounceDomain: string;
  /** Largest report accepted, announced with SIZE. */
  maxBytes: number;
  limits: ReceiverLimits;
  reports: ReportClient;
  metrics: BounceMetrics;
  logger: Logger;
  /** PEM key and certificate: STARTTLS is offered only with them. */
  tls?: { key: Buffer; cert: Buffer };
  /** How long close() waits for open sessions before ending them. */
  closeTimeoutMs?: number;
}

export interface Receiver {
  readonly port: number;
  listening(): boolean;
  close(): Promise<void>;
}

/** An SMTP reply: smtp-server sends `<responseCode> <message>`. */
class SmtpReply extends Error {
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

/** An smtp-server handler error: smtp-server replies `responseCode message`. */
function refusal(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const { dataKey, bounceDomain, limits, reports, metrics, logger } = options;
  const memory = new ReportMemory({ maxBytes: options.maxBytes, maxHeldBytes: limits.maxHeldBytes });

  const unsubscribe = async (raw: Buffer): Promise<Handled> => {
    const token = readUnsubscribeRequest(raw);
    if (token === undefined || readUnsubscribeToken(dataKey, token) === undefined) {
      throw new SmtpReply(550, '5.6.0 No valid unsubscribe token in the Subject', 'unsubscribe', 'refused');
    }
    try {
      const answer = await reports.call('Unsubscribe', { token, source: 'mailto', dryRun: false });
      return { kind: 'unsubscribe', outcome: answer.changed ? 'applied' : 'duplicate' };
    } catch (error) {
      throw replyToFailure(error, 'unsubscribe');
    }
  };

  const report = async (recipient: Exclude<Recipient, { kind: 'unsubscribe' }>, raw: Buffer): Promise<Handled> => {
    let read;
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
  };

  const handle = async (intake: Intake, recipient: Recipient): Promise<Handled> => {
    if (intake.kind === 'too-large') throw new SmtpReply(552, `5.3.4 Message exceeds the fixed limit of ${options.maxBytes} bytes`, 'other', 'refused');
    if (intake.kind === 'no-room') throw new SmtpReply(451, '4.3.1 Too many reports at once, try again later', 'other', 'deferred');
    return recipient.kind === 'unsubscribe' ? unsubscribe(intake.raw) : report(recipient, intake.raw);
  };

  /** The reply to a report: recorded and logged, never a rejection (the report's bytes are held until it settles). */
  const replyTo = (outcome: Promise<Handled>): Promise<{ error: SmtpReply } | { message: string }> =>
    outcome.then(
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

  const tlsOptions: Partial<SMTPServerOptions> = options.tls ? { key: options.tls.key, cert: options.tls.cert } : { hideSTARTTLS: true };
  const server: SMTPServer = new SMTPServer({
    secure: false,
    ...tlsOptions,
    banner: 'Notify bounce-svc: bounce, complaint and unsubscribe reports only',
    disabledCommands: options.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    authOptional: true,
    size: options.maxBytes,
    maxClients: limits.maxClients,
    // The idle timeout: a client silent this long in the middle of its message is gone. Between commands the command
    // clock (SessionLimits) is the stricter one, as it also ends a client that drips bytes without completing a line.
    socketTimeout: limits.commandTimeoutMs,
    // Nothing reads the client's host name, and a PTR lookup per connection would have a flood of connections make a
    // flood of DNS queries, each greeting waiting on them (up to 1.5 s).
    disableReverseLookup: true,
    logger: false,
    closeTimeout: options.closeTimeoutMs ?? 10_000,
    onConnect(session, callback) {
      callback(sessions.admit(session));
    },
    onClose(session) {
      sessions.release(session);
    },
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length > 0) {
        // One report per transaction: the reporting server sends the next recipient in another one.
        callback(refusal(452, '4.5.3 One recipient per report'));
        return;
      }
      if (sessions.of(session)?.takeRecipient() === false) {
        callback(refusal(452, '4.5.3 Too many recipients in this session, send the rest in another one'));
        return;
      }
      if (readRecipient(dataKey, address.address, bounceDomain) === undefined) {
        metrics.record('other', 'refused');
        callback(refusal(550, '5.1.1 No such recipient here'));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const address = session.envelope.rcptTo[0]?.address ?? '';
      const recipient = readRecipient(dataKey, address, bounceDomain)!;
      const limited = sessions.of(session);
      limited?.stopCommandClock();
      memory
        .receive(stream, (intake) => replyTo(handle(intake, recipient)))
        .then(
          (reply) => ('error' in reply ? callback(reply.error) : callback(null, reply.message)),
          // The stream failed: the client left in the middle of its message (or was ended), and no reply reaches it.
          () => callback(refusal(451, '4.4.2 The connection ended in the middle of the message')),
        )
        .finally(() => limited?.startCommandClock());
    },
  });
  const sessions = new SessionLimits(server, limits);
  server.on('error', (error) => logger.warn({ err: error }, 'SMTP session error'));

  const port = await listenOn(server.server, options.port, options.host);
  logger.info({ port }, 'SMTP listener up');
  return {
    port,
    listening: () => server.server.listening,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
