// The messages that cross NATS (messaging/v1/messaging.proto), as the services hold them, and their one encoder and
// reader each. Readers tolerate fields they do not know (a newer writer's additions) and refuse a message that lacks a
// required field or is not of a schema they read (one without the `Notify-Schema` header included), naming what is
// wrong; the caller logs it and dead-letters the bytes.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import type * as wire from './generated/notify/messaging/v1/index.ts';

/** The NATS header naming a message's full type, and so its version. */
export const schemaHeader = 'Notify-Schema';

/** Bytes ready to publish, and the schema header value that says how to read them. */
export interface WireMessage {
  readonly schema: string;
  readonly bytes: Uint8Array;
}

/** What a delivery event reports: a value of the DeliveryState enum of messaging.proto, by name. */
export type DeliveryState = Exclude<wire.DeliveryState__Output, 'DELIVERY_STATE_UNSPECIFIED'>;

export type TemplateSnapshot = wire.TemplateSnapshot__Output;
export type Requeue = wire.Requeue__Output;

/** The delivery job as the services hold it: `data` parsed, `requeue` only on a re-queued delivery, `test` only on a test key's. */
/** Who a job's mail is From, when the send named it: one addr-spec on a verified sending domain, and a display name ('' for none). */
export interface JobSender {
  address: string;
  name: string;
}

export type DeliveryJob = Omit<wire.DeliveryJob__Output, 'dataJson' | 'template' | 'requeue' | 'test' | 'fromAddress' | 'fromName'> & {
  data: Record<string, unknown>;
  template: TemplateSnapshot;
  requeue?: Requeue;
  test?: true;
  /** Absent: From the mailer's MAIL_FROM. */
  from?: JobSender;
};

/** A delivery event as the services hold it. */
export type DeliveryEvent = Pick<wire.DeliveryEvent__Output, 'messageId' | 'attempt' | 'occurredAt' | 'smtpCode' | 'smtpResponse' | 'reason'> & {
  state: DeliveryState;
  /** Only on a `failed` event (see messaging.proto). */
  suppression?: EventSuppression;
};

/** What a failed delivery says about its recipient's address. */
export type EventSuppression = 'hard_bounce';
const eventSuppressions: readonly EventSuppression[] = ['hard_bounce'];

/** One webhook event to deliver to one endpoint. */
export type WebhookDelivery = wire.WebhookDelivery__Output;

/** What a key announcement asks every replica to forget. */
export type KeyTarget = { keyPrefix: string } | { everyKey: true };

/** A message read off the wire, or why it could not be (with its message id when that much was readable). */
export type Read<T> = { ok: true; value: T } | { ok: false; reason: string; messageId?: number };

const root = protobuf.loadSync(fileURLToPath(new URL('../messaging/v1/messaging.proto', import.meta.url)));

/** Every DeliveryState, in the enum's order (the generated types are only types: the list is read from the .proto). */
export const deliveryStates: readonly DeliveryState[] = Object.entries(root.lookupEnum('notify.messaging.v1.DeliveryState').values)
  .filter(([, number]) => number !== 0)
  .sort(([, a], [, b]) => a - b)
  .map(([name]) => name as DeliveryState);
/** The options the generated `__Output` types are made for (proto/package.json). */
const toObjectOptions: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, oneofs: true };

function codec(name: string) {
  const type = root.lookupType(`notify.messaging.v1.${name}`);
  const schema = type.fullName.replace(/^\./, '');
  return {
    schema,
    encode: (value: Record<string, unknown>): WireMessage => ({ schema, bytes: type.encode(type.fromObject(value)).finish() }),
    /** Undefined when the bytes are not this type at all. */
    decode: (bytes: Uint8Array): Record<string, unknown> | undefined => {
      try {
        return type.toObject(type.decode(bytes), toObjectOptions);
      } catch {
        return undefined;
      }
    },
  };
}

const jobCodec = codec('DeliveryJob');
const eventCodec = codec('DeliveryEvent');
const eventBatchCodec = codec('DeliveryEventBatch');
const keyCodec = codec('KeyAnnouncement');
const webhookCodec = codec('WebhookDelivery');

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isString = (value: unknown): value is string => typeof value === 'string';
/** Proto3 cannot tell an absent string from an empty one: a required one must not be empty. */
const isText = (value: unknown): value is string => isString(value) && value !== '';
const isTimestamp = (value: unknown): value is string => isString(value) && !Number.isNaN(Date.parse(value));
const isAttempt = (value: unknown): value is number => isId(value) && (value as number) <= 2_147_483_647;
// Control characters in a recipient would let data reach the SMTP envelope or headers unescaped.
const isRecipient = (value: unknown): value is string => isString(value) && value.length > 0 && value.length <= 254 && !/[\u0000-\u001f\u007f,;<>]/.test(value);
const isTemplate = (value: unknown): value is TemplateSnapshot =>
  isObject(value) && isText(value.slug) && isId(value.version) && isString(value.subject) && isString(value.html) && isString(value.text);
/** A display name goes into the From header: no control characters (nodemailer encodes the rest). */
const isSenderName = (value: unknown): boolean => isString(value) && value.length <= 200 && !/\p{Cc}/u.test(value);
const isSender = (address: unknown, name: unknown): boolean =>
  (address === '' || isRecipient(address)) && isSenderName(name) && (address !== '' || name === '');
const isRequeue = (value: unknown): boolean => value === undefined || value === null || (isObject(value) && isId(value.attemptBase) && isTimestamp(value.at));

function refused<T>(what: string, problems: string, messageId: unknown): Read<T> {
  const reason = `malformed ${what}: ${problems}`;
  return isId(messageId) ? { ok: false, reason, messageId } : { ok: false, reason };
}

/** The fields of a decoded message, or why there are none: no schema or one this release does not read, or unreadable bytes. */
function fieldsOf(bytes: Uint8Array, schema: string | undefined, expected: ReturnType<typeof codec>): Record<string, unknown> | string {
  if (schema !== expected.schema) return `schema ${schema ?? '(none)'} is not ${expected.schema}`;
  return expected.decode(bytes) ?? `not a ${expected.schema}`;
}

export function encodeDeliveryJob(job: DeliveryJob): WireMessage {
  const { from, ...rest } = job;
  return jobCodec.encode({ ...rest, dataJson: JSON.stringify(job.data), fromAddress: from?.address ?? '', fromName: from?.name ?? '' });
}

/** Reads a job; `schema` is the message's Notify-Schema header. */
export function readDeliveryJob(bytes: Uint8Array, schema: string | undefined): Read<DeliveryJob> {
  const fields = fieldsOf(bytes, schema, jobCodec);
  if (typeof fields === 'string') return refused('job', fields, undefined);
  let data: unknown;
  try {
    data = JSON.parse(fields.dataJson as string);
  } catch {
    data = undefined;
  }
  const problems = [
    !isId(fields.messageId) && 'messageId',
    !isText(fields.celeryTaskId) && 'celeryTaskId',
    !isId(fields.projectId) && 'projectId',
    !isId(fields.organizationId) && 'organizationId',
    !isRecipient(fields.to) && 'to',
    !isObject(data) && 'data',
    !isTimestamp(fields.acceptedAt) && 'acceptedAt',
    !isTemplate(fields.template) && 'template',
    !isRequeue(fields.requeue) && 'requeue',
    !isSender(fields.fromAddress, fields.fromName) && 'from',
  ].filter((problem): problem is string => problem !== false);
  if (problems.length > 0) return refused('job', `invalid ${problems.join(', ')}`, fields.messageId);
  const { messageId, celeryTaskId, projectId, organizationId, to, acceptedAt, template, requeue } = fields as unknown as wire.DeliveryJob__Output;
  const job: DeliveryJob = {
    messageId,
    celeryTaskId,
    projectId,
    organizationId,
    to,
    data: data as Record<string, unknown>,
    template: template as TemplateSnapshot,
    acceptedAt,
  };
  if (requeue) job.requeue = { attemptBase: requeue.attemptBase, at: requeue.at };
  if (fields.test === true) job.test = true;
  if (fields.fromAddress !== '') job.from = { address: fields.fromAddress as string, name: fields.fromName as string };
  return { ok: true, value: job };
}

/**
 * The Nats-Msg-Id of a delivery: the message's celery_task_id for the first, `<celery_task_id>:requeue:<attemptBase>`
 * for a re-queued one. Not the message id, which a database restored or created again hands out anew: within the
 * stream's duplicate window a new message would be dropped as a copy of an old one.
 */
export function deliveryJobId(job: Pick<DeliveryJob, 'celeryTaskId' | 'requeue'>): string {
  return job.requeue ? `${job.celeryTaskId}:requeue:${job.requeue.attemptBase}` : job.celeryTaskId;
}

export function encodeDeliveryEvent(event: DeliveryEvent): WireMessage {
  return eventCodec.encode(event);
}

/** Longer SMTP replies and reasons are cut: the row they end in is for reading, not an archive of a misbehaving relay. */
const maxTextLength = 2_000;

/** Reads an event; `schema` is the message's Notify-Schema header. */
export function readDeliveryEvent(bytes: Uint8Array, schema: string | undefined): Read<DeliveryEvent> {
  const fields = fieldsOf(bytes, schema, eventCodec);
  return typeof fields === 'string' ? refused('event', fields, undefined) : eventOf(fields);
}

/** An event and the `traceparent` of the span that published it ('' when it has none), as a batch carries them. */
export interface CarriedEvent {
  readonly event: DeliveryEvent;
  readonly traceparent: string;
}

/**
 * A batch of events ready to publish on `Topology.eventBatchesSubject`. SMTP replies and reasons are cut here as a
 * reader cuts them, so that what a relay answers cannot swell a batch past NATS's max_payload: at most `maxTextLength`
 * characters of each, some 4 KiB an event (`maxEventsPerBatch` of them stay well under 1 MiB).
 */
export function encodeDeliveryEventBatch(events: readonly CarriedEvent[]): WireMessage {
  const cut = (text: string | null | undefined) => (text == null ? text : text.slice(0, maxTextLength));
  return eventBatchCodec.encode({
    events: events.map(({ event, traceparent }) => ({ event: { ...event, smtpResponse: cut(event.smtpResponse), reason: cut(event.reason) }, traceparent })),
  });
}

/** One event read off the events stream, with the `traceparent` its batch gave it (a single event carries it in a header). */
export type ReadEvent = Read<DeliveryEvent> & { traceparent?: string };

/**
 * Reads what the events stream carries: a single event or a batch. The events of a batch are read each on its own (one
 * that cannot be read does not cost the others theirs); the outer result refuses a message that is neither.
 */
export function readEventsMessage(bytes: Uint8Array, schema: string | undefined): Read<ReadEvent[]> {
  if (schema !== eventBatchCodec.schema) {
    const read = readDeliveryEvent(bytes, schema);
    return read.ok ? { ok: true, value: [read] } : read;
  }
  const fields = eventBatchCodec.decode(bytes);
  if (fields === undefined) return refused('event batch', `not a ${eventBatchCodec.schema}`, undefined);
  const events = Array.isArray(fields.events) ? (fields.events as unknown[]) : [];
  if (events.length === 0) return refused('event batch', 'no events', undefined);
  return {
    ok: true,
    value: events.map((carried): ReadEvent => {
      const { event, traceparent } = isObject(carried) ? carried : {};
      const read = isObject(event) ? eventOf(event) : refused<DeliveryEvent>('event', 'missing', undefined);
      return isText(traceparent) ? { ...read, traceparent } : read;
    }),
  };
}

function eventOf(fields: Record<string, unknown>): Read<DeliveryEvent> {
  const { messageId, state, attempt, occurredAt, smtpCode, smtpResponse, reason, suppression } = fields;
  const problems = [
    !isId(messageId) && 'messageId',
    !(deliveryStates as readonly unknown[]).includes(state) && 'state',
    !isAttempt(attempt) && 'attempt',
    !isTimestamp(occurredAt) && 'occurredAt',
    smtpCode != null && !(Number.isInteger(smtpCode) && (smtpCode as number) >= 100 && (smtpCode as number) <= 599) && 'smtpCode',
    smtpResponse != null && !isString(smtpResponse) && 'smtpResponse',
    reason != null && !isString(reason) && 'reason',
    suppression != null && !(state === 'failed' && (eventSuppressions as readonly unknown[]).includes(suppression)) && 'suppression',
  ].filter((problem): problem is string => problem !== false);
  if (problems.length > 0) return refused('event', `invalid ${problems.join(', ')}`, messageId);
  const event: DeliveryEvent = {
    messageId: messageId as number,
    state: state as DeliveryState,
    attempt: attempt as number,
    occurredAt: new Date(occurredAt as string).toISOString(),
  };
  if (smtpCode != null) event.smtpCode = smtpCode as number;
  if (smtpResponse != null) event.smtpResponse = (smtpResponse as string).slice(0, maxTextLength);
  if (reason != null) event.reason = (reason as string).slice(0, maxTextLength);
  if (suppression != null) event.suppression = suppression as EventSuppression;
  return { ok: true, value: event };
}

/** The Nats-Msg-Id of an event: one per delivery attempt and state, so a re-published event is a duplicate. */
export function deliveryEventId(event: Pick<DeliveryEvent, 'messageId' | 'attempt' | 'state'>): string {
  return `${event.messageId}:${event.attempt}:${event.state}`;
}

export function encodeKeyAnnouncement(target: KeyTarget): WireMessage {
  return keyCodec.encode(target);
}

/** What an announcement names; undefined when it cannot be read, which its readers take as "forget everything". */
export function readKeyAnnouncement(bytes: Uint8Array, schema: string | undefined): KeyTarget | undefined {
  if (schema !== keyCodec.schema) return undefined;
  const fields = keyCodec.decode(bytes);
  if (fields?.target === 'keyPrefix' && isString(fields.keyPrefix) && fields.keyPrefix !== '') return { keyPrefix: fields.keyPrefix };
  if (fields?.target === 'everyKey' && fields.everyKey === true) return { everyKey: true };
  return undefined;
}

export function encodeWebhookDelivery(delivery: WebhookDelivery): WireMessage {
  return webhookCodec.encode({ ...delivery });
}

/** Reads a webhook delivery; `schema` is the message's Notify-Schema header. */
export function readWebhookDelivery(bytes: Uint8Array, schema: string | undefined): Read<WebhookDelivery> {
  const fields = fieldsOf(bytes, schema, webhookCodec);
  if (typeof fields === 'string') return refused('webhook delivery', fields, undefined);
  const problems = [!isId(fields.eventId) && 'eventId', !isId(fields.endpointId) && 'endpointId'].filter((problem): problem is string => problem !== false);
  if (problems.length > 0) return refused('webhook delivery', `invalid ${problems.join(', ')}`, undefined);
  return { ok: true, value: { eventId: fields.eventId as number, endpointId: fields.endpointId as number } };
}

/** The Nats-Msg-Id of a webhook delivery: one per publish generation (see WebhookDelivery in messaging.proto). */
export function webhookDeliveryId(delivery: WebhookDelivery, attempts: number): string {
  return `evt_${delivery.eventId}:${delivery.endpointId}:${attempts}`;
}
