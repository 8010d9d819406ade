// A project's webhook endpoints (with, for operators, the form that adds one and the buttons that disable and enable
// them) and one endpoint's attempts log (with a replay button per event). A new endpoint's secret appears once, in
// the page that answers the form post, and is never kept by the panel.
import { type dispatch, webhookEventTypes } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { timeElement } from './format.ts';
import { type Html, html } from './html.ts';
import { type Notice, notice } from './pages.ts';

/** What the add form shows again after a mistake, and its faults. */
export interface WebhookForm {
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly faults: { readonly url?: string; readonly eventTypes?: string };
}

const emptyForm: WebhookForm = { url: '', eventTypes: [], faults: {} };

function statusText(t: Translate, webhook: dispatch.Webhook__Output): string {
  if (webhook.enabled) return t('webhooks.enabled');
  if (webhook.disabledReason === 'operator' || webhook.disabledReason === 'gone' || webhook.disabledReason === 'failing')
    return t(`webhooks.reason.${webhook.disabledReason}`);
  return t('webhooks.disabled');
}

function enableButton(t: Translate, projectId: number, webhook: dispatch.Webhook__Output, csrfToken: string): Html {
  const label = webhook.enabled ? t('webhooks.disable') : t('webhooks.enable');
  return html`<form method="post" action="/panel/projects/${projectId}/webhooks/${webhook.id}/enabled" class="inline-action">
  <input type="hidden" name="${csrfField}" value="${csrfToken}">
  <input type="hidden" name="enabled" value="${webhook.enabled ? 'false' : 'true'}">
  <button type="submit" aria-label="${label} ${webhook.id}">${label}</button>
</form>`;
}

function addForm(t: Translate, projectId: number, form: WebhookForm, csrfToken: string): Html {
  const urlDescribed = form.faults.url ? html` aria-describedby="url-hint url-fault" aria-invalid="true"` : html` aria-describedby="url-hint"`;
  const boxes = webhookEventTypes.map((type) => {
    const id = `event-${type.replace('.', '-')}`;
    return html`<li><input type="checkbox" id="${id}" name="events" value="${type}"${form.eventTypes.includes(type) ? html` checked` : undefined}> <label for="${id}"><code>${type}</code></label></li>`;
  });
  return html`<h2>${t('webhooks.add')}</h2>
<form method="post" action="/panel/projects/${projectId}/webhooks" class="webhook-add">
  <input type="hidden" name="${csrfField}" value="${csrfToken}">
  <p class="field">
  <label for="url">${t('webhooks.url')}</label>
  <input id="url" name="url" type="url" required maxlength="2000" value="${form.url}"${urlDescribed}>
  <span class="hint" id="url-hint">${t('webhooks.urlHint')}</span>
  ${form.faults.url ? html`<span class="fault" id="url-fault">${form.faults.url}</span>` : undefined}
  </p>
  <fieldset>
  <legend>${t('webhooks.events')}</legend>
  <span class="hint">${t('webhooks.eventsHint')}</span>
  ${form.faults.eventTypes ? html`<span class="fault" role="alert">${form.faults.eventTypes}</span>` : undefined}
  <ul class="event-types">${boxes}</ul>
  </fieldset>
  <p><button type="submit">${t('webhooks.addSubmit')}</button></p>
</form>`;
}

export function webhooksView(
  t: Translate,
  options: {
    project: { id: number; name: string };
    webhooks: readonly dispatch.Webhook__Output[];
    canManage: boolean;
    csrfToken: string;
    notice?: Notice;
    /** Just created: the one time its secret is shown. */
    created?: { readonly id: number; readonly secret: string };
    form?: WebhookForm;
  },
): Html {
  const { project } = options;
  const rows = options.webhooks.map(
    (webhook) => html`<tr>
  <td><a href="/panel/projects/${project.id}/webhooks/${webhook.id}">${webhook.id}</a></td>
  <td><code>${webhook.url}</code></td>
  <td>${webhook.eventTypes.map((type, index) => html`${index > 0 ? ', ' : undefined}<code>${type}</code>`)}</td>
  <td>${statusText(t, webhook)}</td>
  <td>${timeElement(webhook.failingSince)}</td>
  <td>${timeElement(webhook.createdAt)}</td>
  ${options.canManage ? html`<td>${enableButton(t, project.id, webhook, options.csrfToken)}</td>` : undefined}
</tr>`,
  );
  const created = options.created;
  return html`<h1>${t('webhooks.title', { project: project.name })}</h1>
<p>${t('webhooks.note')}</p>
${notice(options.notice)}
${
  created
    ? html`<div class="notice notice-info" role="status">
  <p>${t('webhooks.added', { id: created.id })}</p>
  <p><label for="secret">${t('webhooks.secret')}</label> <input id="secret" class="secret" type="text" readonly value="${created.secret}" size="56"></p>
</div>`
    : undefined
}
${
  options.webhooks.length === 0
    ? html`<p>${t('webhooks.none')}</p>`
    : html`<table>
  <caption>${t('webhooks.caption')}</caption>
  <thead><tr><th scope="col">${t('webhooks.id')}</th><th scope="col">${t('webhooks.url')}</th><th scope="col">${t('webhooks.events')}</th><th scope="col">${t('webhooks.status')}</th><th scope="col">${t('webhooks.failingSince')}</th><th scope="col">${t('webhooks.created')}</th>${options.canManage ? html`<th scope="col"><span class="visually-hidden">${t('webhooks.actions')}</span></th>` : undefined}</tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
${options.canManage ? addForm(t, project.id, options.form ?? emptyForm, options.csrfToken) : undefined}`;
}

export function attemptsView(
  t: Translate,
  options: {
    projectId: number;
    webhook: dispatch.Webhook__Output;
    attempts: readonly dispatch.WebhookAttempt__Output[];
    canReplay: boolean;
    csrfToken: string;
    notice?: Notice;
    paged: boolean;
    /** The `before` cursor of the next (older) page; 0 on the last page. */
    older: number;
  },
): Html {
  const { projectId, webhook } = options;
  const base = `/panel/projects/${projectId}/webhooks/${webhook.id}`;
  // One replay button per event, on its newest attempt.
  const replayable = new Set<number>();
  const rows = options.attempts.map((attempt) => {
    const first = !replayable.has(attempt.eventId);
    replayable.add(attempt.eventId);
    const replay =
      options.canReplay && first
        ? html`<form method="post" action="${base}/events/${attempt.eventId}/replay" class="inline-action">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <button type="submit" aria-label="${t('attempts.replay')} ${attempt.webhookId}">${t('attempts.replay')}</button>
</form>`
        : undefined;
    return html`<tr>
  <td>${timeElement(attempt.attemptedAt)}</td>
  <td><code>${attempt.webhookId}</code></td>
  <td><code>${attempt.eventType}</code></td>
  <td><a href="/panel/projects/${projectId}/messages/${attempt.messageId}">${attempt.messageId}</a></td>
  <td>${attempt.attempt}</td>
  <td>${attempt.statusCode || t('attempts.noResponse')}</td>
  <td>${t('attempts.latencyMs', { ms: attempt.latencyMs })}</td>
  <td>${attempt.error ? html`<span class="fault">${attempt.error}</span>` : html`<pre class="response">${attempt.responseBody}</pre>`}</td>
  ${options.canReplay ? html`<td>${replay}</td>` : undefined}
</tr>`;
  });
  return html`<h1>${t('attempts.title', { id: webhook.id })}</h1>
<p><code>${webhook.url}</code> · ${statusText(t, webhook)} · <a href="/panel/projects/${projectId}/webhooks">${t('attempts.back')}</a></p>
${notice(options.notice)}
${
  options.attempts.length === 0
    ? html`<p>${t('attempts.none')}</p>`
    : html`<table>
  <caption>${t('attempts.caption')}</caption>
  <thead><tr><th scope="col">${t('attempts.at')}</th><th scope="col">${t('attempts.event')}</th><th scope="col">${t('attempts.type')}</th><th scope="col">${t('attempts.message')}</th><th scope="col">${t('attempts.attempt')}</th><th scope="col">${t('attempts.statusCode')}</th><th scope="col">${t('attempts.latency')}</th><th scope="col">${t('attempts.response')}</th>${options.canReplay ? html`<th scope="col"><span class="visually-hidden">${t('attempts.replay')}</span></th>` : undefined}</tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
<p class="pages">${options.paged ? html`<a href="${base}">${t('attempts.newest')}</a> ` : undefined}${options.older > 0 ? html`<a href="${base}?before=${options.older}" rel="next">${t('attempts.older')}</a>` : undefined}</p>`;
}
