// The messages list's filters, from the query string to PanelService.SearchMessages: what the form showed is kept as
// typed, each mistake gets its own message, and times typed in a datetime-local field are read as UTC.
import type { ParsedUrlQuery } from 'node:querystring';
import { isTag, maxTagLength } from '../../send/labels.ts';
import type { Translate } from '../i18n/texts.ts';
import { isState } from '../views/format.ts';
import type { FilterFaults, MessageFilters } from '../views/messages.ts';

export interface ParsedFilters {
  readonly filters: MessageFilters;
  readonly faults: FilterFaults;
  readonly search: { state: string; template: string; recipient: string; createdFrom: string; createdUntil: string; cursor: string; tag: string };
}

const localTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?$/;
/** The cursors dispatch-svc gives out are opaque base64url; anything else is dropped here (the first page is shown). */
const cursorPattern = /^[A-Za-z0-9_-]{1,100}$/;

function first(query: ParsedUrlQuery, name: string, max: number): string {
  const value = query[name];
  const text = Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
  return text.trim().slice(0, max);
}

/** `2026-01-31T09:30` (as typed, in UTC) to an ISO instant; undefined when it is not such a time. */
export function utcInstant(value: string): string | undefined {
  if (!localTime.test(value)) return undefined;
  const time = Date.parse(`${value}Z`);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

export function parseFilters(query: ParsedUrlQuery, t: Translate): ParsedFilters {
  const filters: MessageFilters = {
    state: first(query, 'state', 20),
    template: first(query, 'template', 100),
    recipient: first(query, 'recipient', 254),
    from: first(query, 'from', 19),
    until: first(query, 'until', 19),
    tag: first(query, 'tag', 100),
  };
  const faults: FilterFaults = {};
  if (filters.state !== '' && !isState(filters.state)) faults.state = t('messages.badState');
  const createdFrom = filters.from === '' ? '' : utcInstant(filters.from);
  const createdUntil = filters.until === '' ? '' : utcInstant(filters.until);
  if (createdFrom === undefined) faults.from = t('messages.badTime');
  if (createdUntil === undefined) faults.until = t('messages.badTime');
  if (filters.tag !== '' && !isTag(filters.tag)) faults.tag = t('messages.badTag', { max: maxTagLength });
  const before = first(query, 'before', 101);
  return {
    filters,
    faults,
    search: {
      state: faults.state ? '' : filters.state,
      template: filters.template,
      recipient: filters.recipient,
      createdFrom: createdFrom ?? '',
      createdUntil: createdUntil ?? '',
      cursor: cursorPattern.test(before) ? before : '',
      tag: faults.tag ? '' : filters.tag,
    },
  };
}
