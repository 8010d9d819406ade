// Check 11 in the gateway: the send body's fields, every rule of every field judged at once by one compiled schema,
// each failure named by one message (docs/contract.md, "Fields (422 rules)").
import { Ajv, type ErrorObject } from 'ajv';
import validator from 'validator';
import { type Text, text } from '../i18n/messages.ts';
import { labelMessages, metadataSchema, tagsSchema } from './labels.ts';

export interface SendBody {
  readonly template: string;
  readonly to: string;
  readonly channel: 'email';
  readonly data: Record<string, unknown>;
  readonly tags?: string[];
  readonly metadata?: Record<string, string>;
  /** When to send (RFC 3339 with its offset, later than now, at most maxSendAheadDays ahead); absent to send at once. */
  readonly send_at?: string;
  /** Who the mail is From: `address@domain` or `Name <address@domain>`, on a verified sending domain; absent for MAIL_FROM. */
  readonly from?: string;
}

export type Validation = { valid: true; body: SendBody } | { valid: false; fields: Map<string, Text[]> };

export const maxDataDepth = 32;
/** Items of any one array inside `data`: templates loop over arrays, and a loop in a loop multiplies them. */
export const maxDataArrayItems = 1_000;
/** Values inside `data` in all, at every depth: each member of an object and each item of an array counts one. */
export const maxDataElements = 10_000;
export const maxRecipientLength = 254;
export const maxTemplateLength = 100;
const reservedKeys = new Set(['__proto__', 'constructor', 'prototype']);
/** How far ahead `send_at` may be (docs/contract.md, "Scheduled sends"). */
export const maxSendAheadDays = 30;
const dayMs = 86_400_000;
const rfc3339Time = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant an RFC 3339 date-time names (an offset or `Z` required: a time without one names no instant), or
 * undefined when it is not one: a calendar date that does not exist (February 30) included, which Date.parse would
 * roll over into the next month. A leap second (:60) is refused: the clock it would be judged against has none.
 */
export function parseRfc3339(value: string): number | undefined {
  const parts = rfc3339Time.exec(value);
  if (!parts) return undefined;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 8, 9].map((group) => Number(parts[group] ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59)
    return undefined;
  const instant = Date.parse(value.toUpperCase());
  return Number.isNaN(instant) ? undefined : instant;
}

/** A valid body's `send_at` as dispatch-svc takes it (RFC 3339 in UTC, milliseconds), or '' to send at once. */
export function sendAtOf(body: SendBody): string {
  const instant = body.send_at === undefined ? undefined : parseRfc3339(body.send_at);
  return instant === undefined ? '' : new Date(instant).toISOString();
}

/** Whether `send_at` is later than now: a time already past is refused rather than sent at once (the caller meant a later one). */
const notPast = (value: string): boolean => {
  const instant = parseRfc3339(value);
  return instant === undefined || instant > Date.now();
};
/** Whether `send_at` is at most maxSendAheadDays ahead. */
const withinReach = (value: string): boolean => {
  const instant = parseRfc3339(value);
  return instant === undefined || instant <= Date.now() + maxSendAheadDays * dayMs;
};

/** What the limits on `data` judge: how deep it nests (`value` itself is level 1), whether an object in it has a reserved key, its longest array, and its values in all (each member of an object and each item of an array, at every depth). */
export interface DataShape {
  depth: number;
  reservedKey: boolean;
  longestArray: number;
  elements: number;
}

/** The shape of `value`, in one walk. Iterative: a 256 KiB body can nest deeper than the call stack; the body's size bounds the walk. */
export function shapeOf(value: object): DataShape {
  const shape: DataShape = { depth: 0, reservedKey: false, longestArray: 0, elements: 0 };
  const pending: Array<[object, number]> = [[value, 1]];
  const visit = (child: unknown, depth: number): void => {
    if (child !== null && typeof child === 'object') pending.push([child, depth]);
  };
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [node, depth] = item;
    shape.depth = Math.max(shape.depth, depth);
    if (Array.isArray(node)) {
      shape.longestArray = Math.max(shape.longestArray, node.length);
      shape.elements += node.length;
      for (const child of node) visit(child, depth + 1);
      continue;
    }
    const keys = Object.keys(node);
    shape.elements += keys.length;
    for (const key of keys) {
      if (reservedKeys.has(key)) shape.reservedKey = true;
      // An own `__proto__` (JSON.parse makes one) shadows the accessor: this reads the member, not the prototype.
      visit((node as Record<string, unknown>)[key], depth + 1);
    }
  }
  return shape;
}

/**
 * The limits of `data`, judged from one walk: each limit broken is an error of its own keyword (maxDepth,
 * noReservedKeys, maxArrayItems, maxElements: one message each, below).
 */
function dataWithinLimits(_: boolean, value: object): boolean {
  const shape = shapeOf(value);
  const broken = [
    shape.depth > maxDataDepth && 'maxDepth',
    shape.reservedKey && 'noReservedKeys',
    shape.longestArray > maxDataArrayItems && 'maxArrayItems',
    shape.elements > maxDataElements && 'maxElements',
  ].filter((keyword) => keyword !== false);
  dataWithinLimits.errors = broken.map((keyword) => ({ keyword, params: {} }));
  return broken.length === 0;
}
dataWithinLimits.errors = [] as Partial<ErrorObject>[];

/** One addr-spec: no display name, no list, a real domain with a TLD, RFC 5321 part lengths. */
export const isEmailAddress = (value: string): boolean => validator.isEmail(value, { allow_display_name: false, require_tld: true, allow_ip_domain: false });

/** A `from` as the mailer takes it: one addr-spec and a display name ('' for none). */
export interface Sender {
  readonly address: string;
  readonly name: string;
}
export const maxSenderNameLength = 200;
/** A `from` in all: a name, an address and the quotes and brackets around them. */
export const maxFromLength = 600;
/** `Name <address>` or `"Name" <address>`; a quoted name may hold what an unquoted one may not, but no quote or backslash. */
const nameAndAddress = /^\s*(?:"([^"\\]*)"|([^"<>\\]*?))\s*<([^<>]*)>\s*$/;

/** The mailbox a `from` names, or undefined when it is not one address with an optional name. */
export function parseFrom(value: string): Sender | undefined {
  if (isEmailAddress(value)) return { address: value, name: '' };
  const parts = nameAndAddress.exec(value);
  if (!parts) return undefined;
  const name = (parts[1] ?? parts[2] ?? '').trim();
  const address = parts[3] as string;
  return isEmailAddress(address) && name.length <= maxSenderNameLength ? { address, name } : undefined;
}

const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addFormat('email', { type: 'string', validate: isEmailAddress });
ajv.addKeyword({
  keyword: 'noControlCharacters',
  type: 'string',
  schemaType: 'boolean',
  errors: false,
  validate: (_: boolean, value: string) => !/\p{Cc}/u.test(value),
});
ajv.addKeyword({
  keyword: 'mailbox',
  type: 'string',
  schemaType: 'boolean',
  errors: false,
  validate: (_: boolean, value: string) => parseFrom(value) !== undefined,
});
ajv.addKeyword({ keyword: 'dataLimits', type: 'object', schemaType: 'boolean', errors: true, validate: dataWithinLimits });
// metadata's reserved keys: its values must be strings, so for a body that can pass the walk stays on its one level.
ajv.addKeyword({
  keyword: 'noReservedKeys',
  type: 'object',
  schemaType: 'boolean',
  errors: false,
  validate: (_: boolean, value: object) => !shapeOf(value).reservedKey,
});
// send_at's three rules, each its own keyword (and message); the time rules pass a value that is not a time, which
// `rfc3339` alone names.
ajv.addKeyword({
  keyword: 'rfc3339',
  type: 'string',
  schemaType: 'boolean',
  errors: false,
  validate: (_: boolean, value: string) => parseRfc3339(value) !== undefined,
});
ajv.addKeyword({ keyword: 'notPast', type: 'string', schemaType: 'boolean', errors: false, validate: (_: boolean, value: string) => notPast(value) });
ajv.addKeyword({ keyword: 'withinReach', type: 'string', schemaType: 'boolean', errors: false, validate: (_: boolean, value: string) => withinReach(value) });

const validate = ajv.compile<SendBody>({
  type: 'object',
  required: ['template', 'to', 'channel', 'data'],
  additionalProperties: false,
  properties: {
    template: { type: 'string', minLength: 1, maxLength: maxTemplateLength, pattern: '^[A-Za-z0-9_-]*$' },
    to: { type: 'string', maxLength: maxRecipientLength, noControlCharacters: true, format: 'email' },
    channel: { type: 'string', enum: ['email'] },
    data: { type: 'object', dataLimits: true },
    tags: tagsSchema,
    metadata: metadataSchema,
    send_at: { type: 'string', rfc3339: true, notPast: true, withinReach: true },
    from: { type: 'string', maxLength: maxFromLength, noControlCharacters: true, mailbox: true },
  },
});

/** One message per schema keyword (dataLimits' errors name one of four): the schema above uses each keyword for one rule only. */
const keywordMessages: Record<string, (error: ErrorObject) => Text> = {
  required: () => text('field.required'),
  additionalProperties: () => text('field.unknown'),
  type: (error) => text(error.params.type === 'object' ? 'field.type_object' : 'field.type_string'),
  minLength: () => text('field.blank'),
  maxLength: (error) => text('field.max_length', { max: Number(error.params.limit) }),
  pattern: () => text('template.slug'),
  noControlCharacters: () => text('to.control'),
  format: () => text('to.email'),
  enum: () => text('channel.choice'),
  maxDepth: () => text('data.depth', { max: maxDataDepth }),
  noReservedKeys: () => text('data.keys'),
  maxArrayItems: () => text('data.array_items', { max: maxDataArrayItems }),
  maxElements: () => text('data.elements', { max: maxDataElements }),
  rfc3339: () => text('send_at.format'),
  notPast: () => text('send_at.past'),
  withinReach: () => text('send_at.too_far', { days: maxSendAheadDays }),
  mailbox: () => text('from.mailbox'),
};

function fieldOf(error: ErrorObject): string {
  if (error.keyword === 'required') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty);
  // Every other rule sits on a top-level property: `/template` names the field.
  return error.instancePath.split('/')[1]?.replace(/~1/g, '/').replace(/~0/g, '~') ?? '';
}

/**
 * The most useful messages for one field: a wrong type says only that (the other rules are moot), and "not an email
 * address" is left out when a plainer reason (too long, control characters) already explains the refusal.
 */
function relevant(errors: readonly ErrorObject[]): ErrorObject[] {
  const typeErrors = errors.filter((error) => error.keyword === 'type');
  if (typeErrors.length > 0) return typeErrors;
  const plain = errors.filter((error) => error.keyword !== 'format' && error.keyword !== 'mailbox');
  return plain.length > 0 ? plain : [...errors];
}

/** Validates the parsed body; never throws for any JSON object, and names every refused field with its messages. */
export function validateSendBody(input: Record<string, unknown>): Validation {
  if (validate(input)) return { valid: true, body: input };
  const byField = new Map<string, ErrorObject[]>();
  for (const error of validate.errors ?? []) {
    const field = fieldOf(error);
    byField.set(field, [...(byField.get(field) ?? []), error]);
  }
  const fields = new Map<string, Text[]>();
  for (const [field, errors] of byField) {
    // `field` may be any name the caller sent (`__proto__` included): only the table's own entries count.
    const ownMessages = Object.hasOwn(labelMessages, field) ? labelMessages[field] : undefined;
    const messages = relevant(errors).map((error) => {
      const message = ownMessages?.[error.keyword] ?? keywordMessages[error.keyword];
      if (!message) throw new Error(`no message for schema keyword ${error.keyword}`);
      return message(error);
    });
    // Several items of one list can break the same rule: each message once.
    fields.set(field, [...new Map(messages.map((message) => [JSON.stringify(message), message])).values()]);
  }
  return { valid: false, fields };
}
