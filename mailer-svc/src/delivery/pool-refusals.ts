// The refusals nodemailer's pool keeps to itself. A message refused with 421 (the server closing the connection) on a
// connection the pool had used before, before a byte of it was sent, is sent again by the pool on a new connection
// (up to 5 times, 50 ms to 2 s apart) and the send resolves as if nothing happened: the pool says so only to its
// logger. A destination that answers "421 too many connections" would go unheard by the throttle; this logger hears it.
// Every other line nodemailer logs is dropped, as without a logger (a call costs it one small object).
import type { ExternalLogger } from 'nodemailer/lib/shared';
import { type DeliveryOutcome, normalizeResponse } from './smtp-outcome.ts';

/** The pool's log line for such a message (nodemailer 10, smtp-pool/pool-resource.js); its arguments: connection, Message-ID, error text. */
export const poolRequeueLine = 'Connection #%s was closed by the server before message %s was sent: %s';

/** The refusal an error text such as `Server closed the connection: 421 4.7.0 Too many connections` holds, if any. */
export function refusalIn(text: string): DeliveryOutcome | undefined {
  const reply = /\b([45]\d\d)[ -].*$/.exec(text);
  if (!reply) return undefined;
  const smtpResponse = normalizeResponse(reply[0]);
  return { kind: 'temporary', reason: `mail server refused the connection: ${smtpResponse}`, smtpCode: Number(reply[1]), smtpResponse };
}

/** A nodemailer logger that reports each message the pool sends again after a refusal, by its Message-ID. */
export function poolRefusalLogger(onRefused: (messageId: string, refusal: DeliveryOutcome) => void): ExternalLogger {
  const ignore = (): void => {};
  return {
    trace: ignore,
    debug: ignore,
    warn: ignore,
    error: ignore,
    fatal: ignore,
    info(_data: unknown, message: unknown, ...args: unknown[]) {
      if (message !== poolRequeueLine) return;
      const [, messageId, text] = args;
      const refusal = typeof text === 'string' ? refusalIn(text) : undefined;
      if (typeof messageId === 'string' && refusal !== undefined) onRefused(messageId, refusal);
    },
  };
}

/** Mails being sent, by Message-ID, so that a refusal a pool reports names the recipient it was about. */
export class PoolRefusals {
  /** The logger of every relay's transport (relays.ts). */
  readonly logger: ExternalLogger;
  /** The recipient of each mail being sent, by Message-ID. */
  readonly #sending = new Map<string, string>();

  constructor(onRefused: (to: string, refusal: DeliveryOutcome) => void) {
    this.logger = poolRefusalLogger((messageId, refusal) => {
      const to = this.#sending.get(messageId);
      if (to !== undefined) onRefused(to, refusal);
    });
  }

  /** Runs one send with its Message-ID and recipient known to the logger. */
  async during<T>(messageId: string, to: string, send: () => Promise<T>): Promise<T> {
    this.#sending.set(messageId, to);
    try {
      return await send();
    } finally {
      this.#sending.delete(messageId);
    }
  }
}
