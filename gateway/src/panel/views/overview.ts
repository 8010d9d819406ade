// A project's overview: what happened to its messages over the last hour and day, and its latest failures.
import type { dispatch } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { barChart, dataTable, legend } from './chart.ts';
import { timeElement, timeText } from './format.ts';
import { type Html, html } from './html.ts';
import { requeueButton } from './message.ts';
import { type Notice, notice } from './pages.ts';

function timeWindow(t: Translate, id: string, heading: string, series: dispatch.OverviewSeries__Output | null, labelEvery: number): Html | undefined {
  if (!series) return undefined;
  return html`<section class="window" aria-labelledby="${id}-heading">
<h2 id="${id}-heading">${heading}</h2>
${legend(t, series)}
${barChart({ id, t, series, labelEvery })}
${dataTable(t, series)}
</section>`;
}

function failures(t: Translate, options: { projectId: number; failed: readonly dispatch.Message__Output[]; canRequeue: boolean; csrfToken: string }): Html {
  if (options.failed.length === 0) return html`<p>${t('overview.noFailed')}</p>`;
  const rows = options.failed.map(
    (message) => html`<tr>
  <td><a href="/panel/projects/${options.projectId}/messages/${message.id}">${message.id}</a></td>
  <td>${message.to}</td>
  <td>${message.template}</td>
  <td>${message.failureReason || message.lastSmtpReply}</td>
  <td>${timeElement(message.updatedAt)}</td>
  ${options.canRequeue ? html`<td>${requeueButton(t, { projectId: options.projectId, messageId: message.id, csrfToken: options.csrfToken, back: 'overview' })}</td>` : undefined}
</tr>`,
  );
  return html`<table class="failures">
  <caption>${t('overview.failedCaption')}</caption>
  <thead><tr><th scope="col">${t('column.id')}</th><th scope="col">${t('column.recipient')}</th><th scope="col">${t('column.template')}</th><th scope="col">${t('column.reason')}</th><th scope="col">${t('column.updated')}</th>${
    options.canRequeue ? html`<th scope="col">${t('column.actions')}</th>` : undefined
  }</tr></thead>
  <tbody>${rows}</tbody>
</table>`;
}

export function overviewView(
  t: Translate,
  options: {
    project: { id: number; name: string };
    overview: dispatch.Overview__Output;
    failed: readonly dispatch.Message__Output[];
    canRequeue: boolean;
    csrfToken: string;
    notice?: Notice;
  },
): Html {
  const { project, overview } = options;
  return html`<h1>${t('overview.title', { project: project.name })}</h1>
${notice(options.notice)}
<p class="hint">${t('overview.asOf', { time: timeText(overview.asOf) })}</p>
<div class="windows">
${timeWindow(t, 'hour', t('overview.lastHour'), overview.lastHour, 3)}
${timeWindow(t, 'day', t('overview.lastDay'), overview.lastDay, 4)}
</div>
<h2>${t('overview.failed')}</h2>
${failures(t, { projectId: project.id, failed: options.failed, canRequeue: options.canRequeue, csrfToken: options.csrfToken })}
<p><a href="/panel/projects/${project.id}/messages?state=failed">${t('overview.allFailed')}</a></p>`;
}
