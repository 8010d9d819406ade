// Erasing a recipient (docs/operations.md, "Erasure"): the operator's form at the foot of a project's overview, and
// the page that says what the erasure changed. The address is never shown back: the page is about what was removed.
import type { dispatch } from '@notify/proto';
import type { PanelTextKey, Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { type Html, html } from './html.ts';
import { type Notice, notice } from './pages.ts';

export function erasureForm(t: Translate, options: { projectId: number; csrfToken: string }): Html {
  return html`<section class="erasure" aria-labelledby="erasure-heading">
<h2 id="erasure-heading">${t('erasure.heading')}</h2>
<p>${t('erasure.note')}</p>
<form method="post" action="/panel/projects/${options.projectId}/erase">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <label for="erasure-address">${t('erasure.address')}</label>
  <input id="erasure-address" name="address" type="email" required maxlength="254" autocomplete="off">
  <button type="submit">${t('erasure.submit')}</button>
</form>
</section>`;
}

const changes: readonly { key: PanelTextKey; value: (erasure: dispatch.EraseRecipientResponse__Output) => number }[] = [
  { key: 'erasure.canceled', value: (erasure) => erasure.canceled },
  { key: 'erasure.events', value: (erasure) => erasure.events },
  { key: 'erasure.outbox', value: (erasure) => erasure.outbox },
  { key: 'erasure.webhookEvents', value: (erasure) => erasure.webhookEvents },
  { key: 'erasure.webhookAttempts', value: (erasure) => erasure.webhookAttempts },
  { key: 'erasure.idempotencyRecords', value: (erasure) => erasure.idempotencyRecords },
  { key: 'erasure.suppressions', value: (erasure) => erasure.suppressions },
];

/** What an erasure changed; or, when the address was refused, why, with the form again. */
export function erasureView(
  t: Translate,
  options: { project: { id: number; name: string }; csrfToken: string; erasure?: dispatch.EraseRecipientResponse__Output; notice?: Notice },
): Html {
  const { project, erasure } = options;
  const rows = erasure ? changes.map((change) => html`<tr><th scope="row">${t(change.key)}</th><td>${change.value(erasure)}</td></tr>`) : [];
  return html`<h1>${t('erasure.title', { project: project.name })}</h1>
${notice(options.notice)}
${
  erasure
    ? html`<p role="status">${t('erasure.done', { messages: erasure.messages })}</p>
<table>
  <caption>${t('erasure.caption')}</caption>
  <tbody>${rows}</tbody>
</table>`
    : erasureForm(t, { projectId: project.id, csrfToken: options.csrfToken })
}
<p><a href="/panel/projects/${project.id}">${t('erasure.back')}</a></p>`;
}
