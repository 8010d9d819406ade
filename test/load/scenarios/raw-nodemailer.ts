// Baseline of the delivery figure: nodemailer alone, pooled exactly as the mailer pools it, sending the same kind of
// mail into the same sink with the same number of sends in flight, DKIM-signed as the bench's mail is (nodemailer's
// own signing, with an RSA-2048 key). No queue, no rendering, no events: the ceiling that SMTP, nodemailer and the
// sink allow on this machine.
import { generateKeyPairSync } from 'node:crypto';
import { createTransport } from 'nodemailer';

export interface RawSendResult {
  readonly messages: number;
  /** Seconds from the first accepted mail to the last. */
  readonly spanS: number;
  /** (messages - 1) / span, measured the way the mailer's drain is. */
  readonly perSecond: number;
  readonly failed: number;
}

export async function sendRaw(options: { port: number; messages: number; poolSize: number; concurrency: number }): Promise<RawSendResult> {
  const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const transport = createTransport({
    host: '127.0.0.1',
    port: options.port,
    secure: false,
    pool: true,
    maxConnections: options.poolSize,
    maxMessages: Number.POSITIVE_INFINITY,
    dkim: { domainName: 'bench.notify.test', keySelector: 'bench', privateKey },
  });
  let next = 0;
  let failed = 0;
  let first = 0;
  let last = 0;
  const worker = async (): Promise<void> => {
    while (next < options.messages) {
      const index = next++;
      try {
        await transport.sendMail({
          from: { name: 'Notify', address: 'no-reply@bench.notify.test' },
          to: { name: '', address: `customer-${index}@example.com` },
          subject: 'Hello Ada Lovelace',
          text: 'Hello Ada Lovelace, your code is N-1843.',
          html: '<p>Hello Ada Lovelace, your code is <b>N-1843</b>.</p>',
          messageId: `<raw-${index}@bench.notify.test>`,
          headers: { 'X-Notify-Message-Id': String(index) },
        });
        last = performance.now();
        if (first === 0) first = last;
      } catch {
        failed += 1;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    transport.close();
  }
  const spanS = (last - first) / 1_000;
  const delivered = options.messages - failed;
  return { messages: delivered, spanS, perSecond: spanS > 0 ? (delivered - 1) / spanS : 0, failed };
}
