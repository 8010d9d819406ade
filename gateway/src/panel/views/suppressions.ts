// A project's suppression list: searched by address, newest first, with a remove button per address for operators.
import type { dispatch } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { timeElement } from './format.ts';
import { type Html, html } from './html.ts';
import { type Notice, notice } from './pages.ts';

const reasons = ['hard_bounce', 'complaint', 'unsubscribed', 'manual'] as const;

function reasonText(t: Translate, reason: string): string {
  return (reasons as readonly string[]).includes(reason) ? t(`suppressions.reason.${reason as (typeof reasons)[number]}`) : reason;
}

function removeButton(t: Translate, projectId: number, address: string, csrfToken: string): Html {
  return html`<form method="post" action="/panel/projects/${projectId}/suppressions/remove" class="inline-action">
  <input type="hidden" name="${csrfField}" value="${csrfToken}">
  <input type="hidden" name="address" value="${address}">
  <button type="submit" aria-label="${t('suppressions.remove')} ${address}">${t('suppressions.remove')}</button>
</form>`;
}

export function suppressionsView(
  t: Translate,
  options: {
    project: { id: number; name: string };
    search: string;
    suppressions: readonly dispatch.Suppression__Output[];
    canRemove: boolean;
    csrfToken: string;
    notice?: Notice;
  },
): Html {
  const { project } = options;
  const rows = options.suppressions.map(
    (entry) => html`<tr>
  <td><code>${entry.address}</code></td>
  <td>${reasonText(t, entry.reason)}</td>
  <td>${timeElement(entry.createdAt)}</td>
  <td>${entry.messageId > 0 ? html`<a href="/panel/projects/${project.id}/messages/${entry.messageId}">${entry.messageId}</a>` : undefined}</td>
  ${options.canRemove ? html`<td>${removeButton(t, project.id, entry.address, options.csrfToken)}</td>` : undefined}
</tr>`,
  );
  return html`<h1>${t('suppressions.title', { project: project.name })}</h1>
<p>${t('suppressions.note')}</p>
${notice(options.notice)}
<form method="get" action="/panel/projects/${project.id}/suppressions" class="search">
  <label for="address">${t('suppressions.search')}</label>
  <input id="address" name="address" type="search" maxlength="254" value="${options.search}">
  <button type="submit">${t('suppressions.searchSubmit')}</button>
</form>
${
  options.suppressions.length === 0
    ? html`<p>${t('suppressions.none')}</p>`
    : html`<table>
  <caption>${t('suppressions.caption')}</caption>
  <thead><tr><th scope="col">${t('suppressions.address')}</th><th scope="col">${t('suppressions.reason')}</th><th scope="col">${t('suppressions.since')}</th><th scope="col">${t('suppressions.message')}</th>${options.canRemove ? html`<th scope="col"><span class="visually-hidden">${t('suppressions.actions')}</span></th>` : undefined}</tr></thead>
  <tbody>${rows}</tbody>
</table>`
}`;
}
