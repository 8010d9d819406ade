// The listing's query string (docs/contract.md, "Reading messages"): every parameter judged at once, refused as 422
// `{parameter: [messages]}` like the send endpoint's fields. The cursor is opaque here: dispatch-svc judges it.
import { FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { isTag, maxTagLength } from '../send/labels.ts';
import { maxRecipientLength, maxTemplateLength } from '../send/validation.ts';

export const messageStatuses = ['scheduled', 'queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained', 'canceled'] as const;
export const listLimits = { default: 50, max: 100 } as const;
export const rfc3339Pattern = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?([Zz]|[+-]\\d{2}:\\d{2})$';

const parameters = ['status', 'to', 'template', 'created_after', 'created_before', 'limit', 'cursor', 'tag'] as const;

/** Koa's `ctx.query`. */
export type QueryString = Readonly<Record<string, string | string[] | undefined>>;

/** The query's parameters by name, with a fault in `faults` for each one not `allowed` or given more than once. */
export function queryValues(query: QueryString, allowed: readonly string[], faults: Map<string, FieldMessage[]>): Map<string, string> {
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(query)) {
    if (!allowed.includes(name)) faults.set(name, [text('field.unknown')]);
    else if (Array.isArray(value)) faults.set(name, [text('messages.repeated')]);
    else if (value !== undefined) values.set(name, value);
  }
  return values;
}

/** A page's `limit` parameter: 1 to listLimits.max, the default when absent; anything else a fault in `faults`. */
export function pageLimit(limitText: string, faults: Map<string, FieldMessage[]>): number {
  const limit = limitText === '' ? listLimits.default : Number(limitText);
  if (limitText !== '' && (!/^\d{1,3}$/.test(limitText) || limit < 1 || limit > listLimits.max))
    faults.set('limit', [text('messages.limit', { max: listLimits.max })]);
  return limit;
}

export interface ListQuery {
  readonly state: string;
  readonly to: string;
  readonly template: string;
  readonly createdAfter: string;
  readonly createdBefore: string;
  readonly limit: number;
  readonly cursor: string;
  readonly tag: string;
}

/** Parses Koa's `ctx.query`; throws FieldErrors naming every parameter at fault. */
export function parseListQuery(query: QueryString): ListQuery {
  const faults = new Map<string, FieldMessage[]>();
  const fault = (name: string, message: FieldMessage): void => void faults.set(name, [...(faults.get(name) ?? []), message]);
  const values = queryValues(query, parameters, faults);
  const get = (name: (typeof parameters)[number]): string => values.get(name) ?? '';

  const state = get('status');
  if (state !== '' && !(messageStatuses as readonly string[]).includes(state))
    fault('status', text('messages.status', { choices: messageStatuses.join(', ') }));
  const to = get('to');
  if (to.length > maxRecipientLength) fault('to', text('field.max_length', { max: maxRecipientLength }));
  const template = get('template');
  if (template.length > maxTemplateLength) fault('template', text('field.max_length', { max: maxTemplateLength }));
  else if (!/^[A-Za-z0-9_-]*$/.test(template)) fault('template', text('template.slug'));
  for (const name of ['created_after', 'created_before'] as const) {
    const value = get(name);
    if (value !== '' && (!new RegExp(rfc3339Pattern).test(value) || Number.isNaN(Date.parse(value)))) fault(name, text('messages.time'));
  }
  const limit = pageLimit(get('limit'), faults);
  const cursor = get('cursor');
  if (cursor.length > 200) fault('cursor', text('messages.cursor'));
  const tag = get('tag');
  if (tag !== '' && !isTag(tag)) fault('tag', text('tags.filter', { max: maxTagLength }));

  if (faults.size > 0) throw new FieldErrors(faults);
  return { state, to, template, createdAfter: get('created_after'), createdBefore: get('created_before'), limit, cursor, tag };
}
