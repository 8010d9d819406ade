// Sends rendered mail through the project's SMTP relays (relays.ts) and reports what the relay answered. Every mail goes
// out with its VERP return path as envelope sender (bounces come back to bounce-svc naming the message), From the job's
// `from` when its send named one (else MAIL_FROM), signed with DKIM when that From's domain has a key, and with RFC 8058
// one-click unsubscribe headers when its template asks. Each message is composed into its final bytes once (mime.ts),
// signed over those bytes, and handed to the relay's connection as they are.

import { notifyAttributes } from '@notify/platform';
import { type DataKey, returnPathFor, unsubscribeToken } from '@notify/platform/mail';
import type { DeliveryJob } from '@notify/proto';
import type { RenderedMail } from '@notify/templating';
import { type DkimKey, SigningKeyUnavailable } from '../signing/dkim-keys.ts';
import { signMessage } from '../signing/dkim-sign.ts';
import { jobSender, messageIdFor, type Sender } from './mail-identity.ts';
import { asciiAddress, composeMail } from './mime.ts';
import type { PoolRefusals } from './pool-refusals.ts';
import type { Relays } from './relays.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

export interface MailSenderOptions {
  relays: Relays;
  /** MAIL_FROM: the From of a job that names none. */
  sender: Sender;
  /** Signs the return paths and unsubscribe tokens. */
  dataKey: DataKey;
  /** Domain of the return paths (BOUNCE_DOMAIN). */
  bounceDomain: string;
  /** The gateway's public base URL, without a trailing slash (NOTIFY_PUBLIC_URL). */
  publicUrl: string;
  /**
   * The DKIM key to sign mail From a domain with at the moment of sending; undefined sends unsigned. A promise only for
   * a domain whose key is not held yet (DkimKeys.keyFor).
   */
  dkimKey: (domain: string) => DkimKey | undefined | Promise<DkimKey | undefined>;
  /** Told of each mail handed to the relay, signed or not (the metric). */
  onSigned?: (signed: boolean) => void;
  /** Told of each send, so that a refusal a relay's pool answered by sending again names its recipient (pool-refusals.ts). */
  poolRefusals?: PoolRefusals;
}

export type SendableJob = Pick<DeliveryJob, 'messageId' | 'projectId' | 'to' | 'from'> & { template: Pick<DeliveryJob['template'], 'unsubscribe'> };

export interface MailSender {
  /** Where mail goes first (host and port only: the URL may hold credentials), for the SMTP spans. */
  readonly relay: { readonly host: string; readonly port: number };
  /** Never throws: a refusal or a transport failure comes back as an outcome. */
  send(job: SendableJob, mail: RenderedMail): Promise<DeliveryOutcome>;
  close(): void;
}

/**
 * What a DKIM signature covers, of the fields a message has: RFC 6376 5.4.1's recommendation (nodemailer's default
 * list) and List-Unsubscribe-Post, which RFC 8058 section 4 requires signed together with List-Unsubscribe (mailbox
 * providers ignore the one-click header otherwise).
 */
export const signedHeaderFields: readonly string[] = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'Resent-Date',
  'Resent-From',
  'Resent-Sender',
  'Resent-To',
  'Resent-Cc',
  'Resent-Message-ID',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Help',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
  'List-Subscribe',
  'List-Post',
  'List-Owner',
  'List-Archive',
];

/**
 * The RFC 8058 headers of a mail whose template asks for one-click unsubscribe: an https link the mailbox provider
 * POSTs to, and a mailto fallback bounce-svc reads (RFC 2369). Both carry the same signed token.
 */
export function unsubscribeHeaders(options: Pick<MailSenderOptions, 'dataKey' | 'bounceDomain' | 'publicUrl'>, job: SendableJob): Record<string, string> {
  const token = unsubscribeToken(options.dataKey, { projectId: job.projectId, messageId: job.messageId, address: job.to });
  return {
    'List-Unsubscribe': `<${options.publicUrl}/u/${token}>, <mailto:unsubscribe@${options.bounceDomain}?subject=unsubscribe%20${token}>`,
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };
}

export function createMailSender(options: MailSenderOptions): MailSender {
  return {
    relay: options.relays.primary,
    async send(job, mail) {
      const from = job.from ? jobSender(job.from) : options.sender;
      let dkim: DkimKey | undefined;
      try {
        const held = options.dkimKey(from.domain);
        // Only a domain's first mails wait, for the one fetch of its key; a held key costs no await.
        dkim = held instanceof Promise ? await held : held;
      } catch (error) {
        // Tried again on the delivery schedule, when dispatch-svc may answer: never sent unsigned for want of its key.
        if (error instanceof SigningKeyUnavailable) return { kind: 'temporary', reason: error.message };
        throw error;
      }
      const messageId = messageIdFor(job.messageId, from);
      const envelope = { from: returnPathFor(options.dataKey, job.messageId, options.bounceDomain), to: [asciiAddress(job.to)] };
      const message = composeMail({
        from,
        to: job.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        messageId,
        headers: { 'X-Notify-Message-Id': String(job.messageId), ...(job.template.unsubscribe ? unsubscribeHeaders(options, job) : {}) },
      });
      // The finished bytes go to the relay as they are: built and signed once, never composed again by the transport.
      const raw = dkim ? await signMessage(message, dkim, signedHeaderFields) : message;
      const send = (): Promise<DeliveryOutcome> =>
        options.relays.send(job.projectId, { envelope, raw, messageId }, { [notifyAttributes.messageId]: job.messageId });
      const outcome = await (options.poolRefusals ? options.poolRefusals.during(messageId, job.to, send) : send());
      if (outcome.kind === 'accepted') options.onSigned?.(dkim !== undefined);
      return outcome;
    },
    close: () => options.relays.close(),
  };
}
