// One message: its details, its whole timeline, and (for operators) the re-queue button when it failed, the cancel
// button while it is scheduled. The state,
// the details that change and the timeline carry data-field markers that live.js updates in place.
import type { dispatch } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { smtpReply, stateBadge, stateLabel, timeElement, timeText } from './format.ts';
import { type Html, html } from './html.ts';
import { type Notice, notice } from './pages.ts';

/** What live.js receives from the status endpoint: everything already formatted and translated. */
export interface LiveStatus {
  readonly state: string;
  readonly stateText: string;
  /** Sent, failed or canceled: nothing more will happen unless an operator re-queues a failed one. */
  readonly terminal: boolean;
  readonly attempts: number;
  readonly lastSmtpReply: string;
  readonly failureReason: string;
  readonly updatedAt: string;
  readonly events: readonly { state: string; stateText: string; attempt: number; time: string; timeIso: string; smtpReply: string; reason: string }[];
}

export const isTerminal = (state: string): boolean => state === 'sent' || state === 'failed' || state === 'canceled';

export function liveStatus(t: Translate, message: dispatch.Message__Output): LiveStatus {
  return {
    state: message.state,
    stateText: stateLabel(t, message.state),
    terminal: isTerminal(message.state),
    attempts: message.attempts,
    lastSmtpReply: message.lastSmtpReply,
    failureReason: message.failureReason,
    updatedAt: timeText(message.updatedAt),
    events: message.events.map((event) => ({
      state: event.state,
      stateText: stateLabel(t, event.state),
      attempt: event.attempt,
      time: timeText(event.occurredAt),
      timeIso: event.occurredAt,
      smtpReply: smtpReply(event.smtpCode, event.smtpResponse),
      reason: event.reason,
    })),
  };
}

export function requeueButton(t: Translate, options: { projectId: number; messageId: number; csrfToken: string; back: 'message' | 'overview' }): Html {
  return html`<form method="post" action="/panel/projects/${options.projectId}/messages/${options.messageId}/requeue" class="requeue">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <input type="hidden" name="back" value="${options.back}">
  <button type="submit" aria-label="${t('message.requeue')} ${options.messageId}">${t('message.requeue')}</button>
</form>`;
}

/** Cancels a scheduled message (DispatchService's CancelMessage, from the panel). */
function cancelButton(t: Translate, options: { projectId: number; messageId: number; csrfToken: string }): Html {
  return html`<form method="post" action="/panel/projects/${options.projectId}/messages/${options.messageId}/cancel" class="cancel">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <button type="submit" aria-label="${t('message.cancel')} ${options.messageId}">${t('message.cancel')}</button>
</form>`;
}

/** The trace id, to copy or (with NOTIFY_TRACE_URL_TEMPLATE) to follow into the tracing backend in a new tab. */
function traceId(t: Translate, id: string, url: string | undefined): Html | string {
  if (!id) return t('message.none');
  if (!url) return html`<code>${id}</code>`;
  return html`<a href="${url}" target="_blank" rel="noopener noreferrer" title="${t('message.traceOpens')}"><code>${id}</code></a>`;
}

/** Each tag links to the project's messages with that tag. */
function tagLinks(t: Translate, projectId: number, tags: readonly string[]): Html | string {
  if (tags.length === 0) return t('message.none');
  return html`<ul class="tags">${tags.map((tag) => html`<li><a href="/panel/projects/${projectId}/messages?${new URLSearchParams({ tag }).toString()}"><code>${tag}</code></a></li>`)}</ul>`;
}

function metadataList(t: Translate, metadata: Readonly<Record<string, string>>): Html | string {
  const entries = Object.entries(metadata);
  if (entries.length === 0) return t('message.none');
  return html`<dl class="metadata">${entries.map(([key, value]) => html`<dt><code>${key}</code></dt><dd>${value}</dd>`)}</dl>`;
}

function timelineRows(t: Translate, message: dispatch.Message__Output): Html[] {
  return message.events.map(
    (event) => html`<tr>
  <td>${stateBadge(t, event.state)}</td>
  <td>${event.attempt}</td>
  <td>${timeElement(event.occurredAt)}</td>
  <td>${smtpReply(event.smtpCode, event.smtpResponse)}</td>
  <td>${event.reason}</td>
</tr>`,
  );
}

export function messageView(
  t: Translate,
  options: {
    projectId: number;
    view: dispatch.MessageView__Output;
    message: dispatch.Message__Output;
    /** The message's trace in the tracing backend, when NOTIFY_TRACE_URL_TEMPLATE is set. */
    traceUrl: string | undefined;
    canRequeue: boolean;
    csrfToken: string;
    notice?: Notice;
  },
): Html {
  const { message, view, projectId } = options;
  const statusUrl = `/panel/projects/${projectId}/messages/${message.id}/status`;
  const subject = view.subjectError
    ? html`<span class="unavailable">${t('message.subjectUnavailable', { reason: view.subjectError })}</span>`
    : view.renderedSubject;
  return html`<h1>${t('message.title', { id: message.id })}</h1>
${notice(options.notice)}
${message.test ? html`<p class="notice notice-info"><span class="test-mark">${t('message.test')}</span> ${t('message.testNote')}</p>` : undefined}
<section class="status" aria-live="polite" data-live-status="${statusUrl}" data-terminal="${isTerminal(message.state) ? 'true' : 'false'}">
  <p class="current">${t('column.state')}: <span data-field="state">${stateBadge(t, message.state)}</span></p>
  ${isTerminal(message.state) ? undefined : html`<p class="hint">${t('message.live')}</p>`}
</section>
${options.canRequeue && message.state === 'failed' ? requeueButton(t, { projectId, messageId: message.id, csrfToken: options.csrfToken, back: 'message' }) : undefined}
${options.canRequeue && message.state === 'scheduled' ? cancelButton(t, { projectId, messageId: message.id, csrfToken: options.csrfToken }) : undefined}
<h2>${t('message.details')}</h2>
<dl class="details">
  <dt>${t('column.recipient')}</dt><dd>${message.to}</dd>
  <dt>${t('message.subject')}</dt><dd>${subject}</dd>
  <dt>${t('column.template')}</dt><dd>${message.template}</dd>
  <dt>${t('message.templateVersion')}</dt><dd>${message.templateVersion}</dd>
  <dt><code>celery_task_id</code></dt><dd><code>${message.celeryTaskId}</code></dd>
  <dt>${t('message.idempotencyKey')}</dt><dd>${message.idempotencyKey ? html`<code>${message.idempotencyKey}</code>` : t('message.none')}</dd>
  <dt>${t('message.traceId')}</dt><dd>${traceId(t, message.traceId, options.traceUrl)}</dd>
  <dt>${t('message.tags')}</dt><dd>${tagLinks(t, projectId, message.tags)}</dd>
  <dt>${t('message.metadata')}</dt><dd>${metadataList(t, message.metadata)}</dd>
  <dt>${t('message.attempts')}</dt><dd data-field="attempts">${message.attempts}</dd>
  <dt>${t('message.lastReply')}</dt><dd data-field="lastSmtpReply">${message.lastSmtpReply}</dd>
  <dt>${t('message.failureReason')}</dt><dd data-field="failureReason">${message.failureReason}</dd>
  <dt>${t('column.created')}</dt><dd>${timeElement(message.createdAt)}</dd>
  ${message.sendAt ? html`<dt>${t('message.sendAt')}</dt><dd>${timeElement(message.sendAt)}</dd>` : undefined}
  <dt>${t('column.updated')}</dt><dd data-field="updatedAt">${timeElement(message.updatedAt)}</dd>
</dl>
<h2>${t('message.timeline')}</h2>
<table class="timeline">
  <caption>${t('message.timelineCaption')}</caption>
  <thead><tr><th scope="col">${t('column.state')}</th><th scope="col">${t('message.attempt')}</th><th scope="col">${t('message.time')}</th><th scope="col">${t('message.smtpReply')}</th><th scope="col">${t('column.reason')}</th></tr></thead>
  <tbody data-field="timeline">${timelineRows(t, message)}</tbody>
</table>`;
}
