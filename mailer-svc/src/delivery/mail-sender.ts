// Sends rendered mail through a pooled nodemailer SMTP transport and reports what the relay answered.
import { createTransport } from 'nodemailer';
import type { DeliveryJob } from '@notify/proto';
import type { Logger } from '@notify/platform';
import type { RenderedMail } from '@notify/templating';
import { messageIdFor, type Sender } from './mail-identity.ts';
import { acceptedOutcome, classifySendError, type DeliveryOutcome } from './smtp-outcome.ts';

export interface MailSenderOptions {
  smtpUrl: string;
  sender: Sender;
  /** Most SMTP connections open at once. */
  poolSize: number;
  logger: Logger;
}

export interface MailSender {
  /** Where mail goes (host and port only: the URL may hold credentials), for the SMTP spans. */
  readonly relay: { readonly host: string; readonly port: number };
  /** Never throws: a refusal or a transport failure comes back as an outcome. */
  send(job: Pick<DeliveryJob, 'messageId' | 'to'>, mail: RenderedMail): Promise<DeliveryOutcome>;
  close(): void;
}

// nodemailer's defaults (2 min to connect, 10 min of socket silence) would hold a job far beyond the consumer's ack wait.
const connectionTimeoutMs = 15_000;
const greetingTimeoutMs = 15_000;
const socketTimeoutMs = 60_000;

export function createMailSender(options: MailSenderOptions): MailSender {
  const transport = createTransport({
    url: options.smtpUrl,
    pool: true,
    maxConnections: options.poolSize,
    connectionTimeout: connectionTimeoutMs,
    greetingTimeout: greetingTimeoutMs,
    socketTimeout: socketTimeoutMs,
  });
  // A pooled connection that breaks while idle is reported here; the next send opens a new one.
  transport.on('error', (error) => options.logger.warn({ err: error }, 'SMTP transport error'));

  const url = new URL(options.smtpUrl);
  return {
    relay: { host: url.hostname, port: Number(url.port) || (url.protocol === 'smtps:' ? 465 : 587) },
    async send(job, mail) {
      try {
        const info = await transport.sendMail({
          from: { name: options.sender.name, address: options.sender.address },
          // An address object, not a string, so nodemailer never reads the recipient as a list.
          to: { name: '', address: job.to },
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: messageIdFor(job.messageId, options.sender),
          headers: { 'X-Notify-Message-Id': String(job.messageId) },
        });
        return acceptedOutcome(info.response);
      } catch (error) {
        return classifySendError(error);
      }
    },
    close: () => transport.close(),
  };
}
