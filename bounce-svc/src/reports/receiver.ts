// The SMTP listener reports arrive on (the bounce domain's MX). A report is answered 250 only after dispatch-svc has
// applied it: until then the reporting server keeps it and retries on a 4xx, which is what makes reports durable
// without a queue of our own. Anything not for us, forged or unreadable is refused with a 5xx and changes nothing.
// Anyone may connect, so every resource a client can make it spend is bounded (ReceiverLimits).

import { type Logger, listenOn } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { BounceMetrics } from './metrics.ts';
import { readRecipient } from './recipient.ts';
import { type ReportClient, ReportHandler } from './report-handler.ts';
import { ReportMemory } from './report-memory.ts';
import { type SessionLimitOptions, SessionLimits } from './session-limits.ts';

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

/** An smtp-server handler error: smtp-server replies `responseCode message`. */
function refusal(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

export class Receiver {
  readonly #options: ReceiverOptions;
  readonly #handler: ReportHandler;
  readonly #memory: ReportMemory;
  readonly #server: SMTPServer;
  readonly #sessions: SessionLimits;
  #port = 0;

  /** Listens on `options.port` (0: a free one) of `options.host`. */
  static async start(options: ReceiverOptions): Promise<Receiver> {
    const receiver = new Receiver(options);
    receiver.#port = await listenOn(receiver.#server.server, options.port, options.host);
    options.logger.info({ port: receiver.#port }, 'SMTP listener up');
    return receiver;
  }

  private constructor(options: ReceiverOptions) {
    this.#options = options;
    this.#handler = new ReportHandler(options);
    this.#memory = new ReportMemory({ maxBytes: options.maxBytes, maxHeldBytes: options.limits.maxHeldBytes });
    this.#server = new SMTPServer(this.#serverOptions());
    this.#sessions = new SessionLimits(this.#server, options.limits);
    this.#server.on('error', (error) => options.logger.warn({ err: error }, 'SMTP session error'));
  }

  get port(): number {
    return this.#port;
  }

  listening(): boolean {
    return this.#server.server.listening;
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #serverOptions(): SMTPServerOptions {
    const { tls, maxBytes, limits, closeTimeoutMs } = this.#options;
    const tlsOptions: Partial<SMTPServerOptions> = tls ? { key: tls.key, cert: tls.cert } : { hideSTARTTLS: true };
    return {
      secure: false,
      ...tlsOptions,
      banner: 'Notify bounce-svc: bounce, complaint and unsubscribe reports only',
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      authOptional: true,
      size: maxBytes,
      maxClients: limits.maxClients,
      // The idle timeout: a client silent this long in the middle of its message is gone. Between commands the command
      // clock (SessionLimits) is the stricter one, as it also ends a client that drips bytes without completing a line.
      socketTimeout: limits.commandTimeoutMs,
      // Nothing reads the client's host name, and a PTR lookup per connection would have a flood of connections make a
      // flood of DNS queries, each greeting waiting on them (up to 1.5 s).
      disableReverseLookup: true,
      logger: false,
      closeTimeout: closeTimeoutMs ?? 10_000,
      onConnect: (session, callback) => callback(this.#sessions.admit(session)),
      onClose: (session) => this.#sessions.release(session),
      onRcptTo: (address, session, callback) => this.#onRcptTo(address, session, callback),
      onData: (stream, session, callback) => this.#onData(stream, session, callback),
    };
  }

  #onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    if (session.envelope.rcptTo.length > 0) {
      // One report per transaction: the reporting server sends the next recipient in another one.
      callback(refusal(452, '4.5.3 One recipient per report'));
      return;
    }
    if (this.#sessions.of(session)?.takeRecipient() === false) {
      callback(refusal(452, '4.5.3 Too many recipients in this session, send the rest in another one'));
      return;
    }
    if (readRecipient(this.#options.dataKey, address.address, this.#options.bounceDomain) === undefined) {
      this.#options.metrics.record('other', 'refused');
      callback(refusal(550, '5.1.1 No such recipient here'));
      return;
    }
    callback();
  }

  #onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void): void {
    const address = session.envelope.rcptTo[0]?.address ?? '';
    const recipient = readRecipient(this.#options.dataKey, address, this.#options.bounceDomain)!;
    const limited = this.#sessions.of(session);
    limited?.stopCommandClock();
    this.#memory
      .receive(stream, (intake) => this.#handler.reply(intake, recipient))
      .then(
        (reply) => ('error' in reply ? callback(reply.error) : callback(null, reply.message)),
        // The stream failed: the client left in the middle of its message (or was ended), and no reply reaches it.
        () => callback(refusal(451, '4.4.2 The connection ended in the middle of the message')),
      )
      .finally(() => limited?.startCommandClock());
  }
}
