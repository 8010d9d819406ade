// A project's messages: the filter form (a GET form: bookmarkable, nothing to forge) and one page of the list.
import type { dispatch } from '@notify/proto';
import { maxTagLength } from '../../send/labels.ts';
import type { Translate } from '../i18n/texts.ts';
import { messageStates, stateBadge, stateLabel, timeElement } from './format.ts';
import { type Html, html } from './html.ts';

/** The filters as typed in the form (kept as typed, so a mistake can be corrected), and what was wrong with them. */
export interface MessageFilters {
  readonly state: string;
  readonly template: string;
  readonly recipient: string;
  readonly from: string;
  readonly until: string;
  /** One tag, exact (docs/contract.md, "Tags and metadata"). */
  readonly tag: string;
}

export type FilterFaults = Partial<Record<keyof MessageFilters, string>>;

export function messageRow(t: Translate, projectId: number, message: dispatch.Message__Output): Html {
  return html`<tr>
  <td><a href="/panel/projects/${projectId}/messages/${message.id}">${message.id}</a></td>
  <td>${message.to}</td>
  <td>${message.template} <span class="version">v${message.templateVersion}</span></td>
  <td>${stateBadge(t, message.state)}${message.test ? html` <span class="test-mark">${t('message.test')}</span>` : undefined}</td>
  <td>${timeElement(message.createdAt)}</td>
  <td>${timeElement(message.updatedAt)}</td>
</tr>`;
}

export function messageTableHead(t: Translate): Html {
  return html`<thead><tr><th scope="col">${t('column.id')}</th><th scope="col">${t('column.recipient')}</th><th scope="col">${t('column.template')}</th><th scope="col">${t('column.state')}</th><th scope="col">${t('column.created')}</th><th scope="col">${t('column.updated')}</th></tr></thead>`;
}

function field(id: string, label: string, control: Html, fault: string | undefined, hint?: string): Html {
  return html`<p class="field">
  <label for="${id}">${label}</label>
  ${control}
  ${hint ? html`<span class="hint" id="${id}-hint">${hint}</span>` : undefined}
  ${fault ? html`<span class="fault" id="${id}-fault">${fault}</span>` : undefined}
</p>`;
}

/** aria-describedby naming the hint and the fault that are shown, and aria-invalid when there is a fault. */
function described(id: string, fault: string | undefined, hint: boolean): Html {
  const ids = [hint ? `${id}-hint` : '', fault ? `${id}-fault` : ''].filter(Boolean).join(' ');
  return html`${ids ? html` aria-describedby="${ids}"` : undefined}${fault ? html` aria-invalid="true"` : undefined}`;
}

function filterForm(t: Translate, projectId: number, filters: MessageFilters, faults: FilterFaults, templates: readonly string[]): Html {
  const option = (value: string, label: string, selected: boolean): Html =>
    selected ? html`<option value="${value}" selected>${label}</option>` : html`<option value="${value}">${label}</option>`;
  const states = [
    option('', t('messages.anyState'), filters.state === ''),
    ...messageStates.map((state) => option(state, stateLabel(t, state), filters.state === state)),
  ];
  const slugs = [option('', t('messages.anyTemplate'), filters.template === ''), ...templates.map((slug) => option(slug, slug, filters.template === slug))];
  return html`<form method="get" action="/panel/projects/${projectId}/messages" class="filters" role="search" aria-label="${t('messages.filters')}">
${field('state', t('messages.state'), html`<select id="state" name="state"${described('state', faults.state, false)}>${states}</select>`, faults.state)}
${field('template', t('messages.template'), html`<select id="template" name="template">${slugs}</select>`, faults.template)}
${field('recipient', t('messages.recipient'), html`<input id="recipient" name="recipient" type="text" inputmode="email" maxlength="254" value="${filters.recipient}"${described('recipient', faults.recipient, true)}>`, faults.recipient, t('messages.recipientHint'))}
${field('from', t('messages.from'), html`<input id="from" name="from" type="datetime-local" step="1" value="${filters.from}"${described('from', faults.from, false)}>`, faults.from)}
${field('until', t('messages.until'), html`<input id="until" name="until" type="datetime-local" step="1" value="${filters.until}"${described('until', faults.until, false)}>`, faults.until)}
${field('tag', t('messages.tag'), html`<input id="tag" name="tag" type="text" maxlength="${maxTagLength}" value="${filters.tag}"${described('tag', faults.tag, true)}>`, faults.tag, t('messages.tagHint'))}
<p class="actions"><button type="submit">${t('messages.apply')}</button> <a href="/panel/projects/${projectId}/messages">${t('messages.clear')}</a></p>
</form>`;
}

export function messagesView(
  t: Translate,
  options: {
    project: { id: number; name: string };
    filters: MessageFilters;
    faults: FilterFaults;
    templates: readonly string[];
    messages: readonly dispatch.Message__Output[];
    /** Query string of the next (older) page, or undefined on the last page. */
    older?: string;
    /** This page is not the newest. */
    paged: boolean;
  },
): Html {
  const { project } = options;
  const table =
    options.messages.length === 0
      ? html`<p>${t('messages.none')}</p>`
      : html`<table class="messages">
  <caption>${t('messages.caption')}</caption>
  ${messageTableHead(t)}
  <tbody>${options.messages.map((message) => messageRow(t, project.id, message))}</tbody>
</table>`;
  const pages = [
    options.paged ? html`<a href="/panel/projects/${project.id}/messages?${filterQuery(options.filters)}">${t('messages.newest')}</a>` : undefined,
    options.older ? html`<a href="/panel/projects/${project.id}/messages?${options.older}" rel="next">${t('messages.older')}</a>` : undefined,
  ].filter(Boolean);
  return html`<h1>${t('messages.title', { project: project.name })}</h1>
${filterForm(t, project.id, options.filters, options.faults, options.templates)}
${table}
${pages.length > 0 ? html`<nav class="pages" aria-label="${t('messages.caption')}">${pages}</nav>` : undefined}`;
}

/** The filters as a query string, for the links between pages. */
export function filterQuery(filters: MessageFilters, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filters, ...extra })) if (value !== '') query.set(name, value);
  return query.toString();
}
