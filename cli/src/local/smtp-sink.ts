// A real SMTP server for local runs and end-to-end tests: accepts every mail on loopback, keeps it as an .eml file
// and logs its subject. Tests can make it answer a chosen 4xx/5xx per recipient to exercise the mailer's retry paths.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, listenOn } from '@notify/platform';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';

/** What the sink knows when a recipient is offered (RCPT TO). */
export interface SinkEnvelope {
  from: string;
  to: string;
}

/** A reply the sink gives instead of accepting a recipient, such as `{ code: 451, message: '4.7.1 try later' }`. */
export interface SinkReply {
  code: number;
  message: string;
}

export interface SmtpSinkOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Directory the .eml files are written to; created when missing. */
  dir: string;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Decides per recipient; `undefined` accepts it. A promise lets a test hold the answer back, like a slow relay. */
  reply?: (envelope: SinkEnvelope) => SinkReply | undefined | Promise<SinkReply | undefined>;
  /** Largest message accepted, announced with the SIZE extension. */
  maxBytes?: number;
}

export interface SmtpSink {
  readonly port: number;
  /** How many mails were stored so far. */
  received(): number;
  close(): Promise<void>;
}

const defaultMaxBytes = 10 * 1024 * 1024;

function smtpError(reply: SinkReply): Error {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startSmtpSink(options: SmtpSinkOptions): Promise<SmtpSink> {
  await mkdir(options.dir, { recursive: true });
  const maxBytes = options.maxBytes ?? defaultMaxBytes;
  let stored = 0;
  let sequence = 0;

  const store = async (stream: SMTPServerDataStream): Promise<void> => {
    const raw = await readAll(stream);
    // smtp-server keeps reading an oversized message so the client gets a proper reply; refuse it here.
    if (stream.sizeExceeded) throw smtpError({ code: 552, message: `5.3.4 Message exceeds the fixed limit of ${maxBytes} bytes` });
    sequence += 1;
    const file = join(options.dir, `${Date.now()}-${sequence}.eml`);
    await writeFile(file, raw);
    stored += 1;
    try {
      const parsed = await simpleParser(raw);
      options.logger.info({ subject: parsed.subject ?? '', to: parsed.to ? [parsed.to].flat().map((a) => a.text) : [], file }, 'mail received');
    } catch (error) {
      // The mail is stored as received either way; an unparsable one is worth a look, not a refusal.
      options.logger.warn({ err: error, file }, 'mail received but could not be parsed');
    }
  };

  const server = new SMTPServer({
    // Loopback only, for development and tests: no TLS, and any credentials (or none) are accepted.
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    size: maxBytes,
    logger: false,
    closeTimeout: 1_000,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' });
    },
    onRcptTo(address, session, callback) {
      const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address;
      Promise.resolve(options.reply?.({ from, to: address.address })).then(
        (reply) => callback(reply ? smtpError(reply) : null),
        (error: unknown) => {
          options.logger.error({ err: error }, 'SMTP sink reply hook failed');
          callback(smtpError({ code: 451, message: '4.3.0 Temporary sink failure' }));
        },
      );
    },
    onData(stream, _session, callback) {
      store(stream).then(
        () => callback(null),
        (error: unknown) => {
          if (!(error instanceof Error && 'responseCode' in error)) options.logger.error({ err: error }, 'storing a received mail failed');
          callback(error instanceof Error && 'responseCode' in error ? error : smtpError({ code: 451, message: '4.3.0 Could not store the message' }));
        },
      );
    },
  });
  server.on('error', (error) => options.logger.error({ err: error }, 'SMTP sink error'));

  const port = await listenOn(server.server, options.port, options.host);

  return {
    port,
    received: () => stored,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
