// A project's API keys: prefix, kind (live or test), send rate, use and state; operators set a key's send rate here.
import type { auth } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { timeElement } from './format.ts';
import { type Html, html } from './html.ts';
import { type Notice, notice } from './pages.ts';

export interface KeysViewOptions {
  readonly projectId: number;
  readonly project: string;
  readonly keys: readonly auth.ApiKey__Output[];
  /** Present for operators: each live key's rate is then a form. */
  readonly csrfToken?: string;
  readonly notice?: Notice;
}

/** The rate as set, or "default"; for operators, a form to change it (revoked keys send nothing, so they get none). */
function rateCell(t: Translate, options: KeysViewOptions, key: auth.ApiKey__Output): Html | string {
  if (options.csrfToken === undefined || key.revokedAt) return key.sendRate || t('keys.rateDefault');
  const field = `rate-${key.id}`;
  return html`<form method="post" action="/panel/projects/${options.projectId}/keys/${key.id}/rate" class="inline-action">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <label for="${field}" class="visually-hidden">${t('keys.rateLabel', { name: key.name })}</label>
  <input id="${field}" name="rate" value="${key.sendRate}" placeholder="${t('keys.rateDefault')}" size="10" maxlength="40" title="${t('keys.rateHint')}">
  <button type="submit">${t('keys.rateSave')}</button>
</form>`;
}

export function keysView(t: Translate, options: KeysViewOptions): Html {
  const rows = options.keys.map(
    (key) => html`<tr>
  <td>${key.name}</td>
  <td><code>${key.prefix}</code></td>
  <td>${key.test ? html`<span class="test-mark">${t('keys.test')}</span>` : t('keys.live')}</td>
  <td>${rateCell(t, options, key)}</td>
  <td>${timeElement(key.createdAt)}</td>
  <td>${timeElement(key.lastUsedAt, t('keys.never'))}</td>
  <td>${key.revokedAt ? html`<span class="revoked">${t('keys.revoked')} ${timeElement(key.revokedAt)}</span>` : t('keys.active')}</td>
</tr>`,
  );
  return html`<h1>${t('keys.title', { project: options.project })}</h1>
${notice(options.notice)}
<p>${t('keys.note')}</p>
${
  options.keys.length === 0
    ? html`<p>${t('keys.none')}</p>`
    : html`<table>
  <caption>${t('keys.caption')}</caption>
  <thead><tr><th scope="col">${t('keys.name')}</th><th scope="col">${t('keys.prefix')}</th><th scope="col">${t('keys.kind')}</th><th scope="col">${t('keys.rate')}</th><th scope="col">${t('keys.created')}</th><th scope="col">${t('keys.lastUsed')}</th><th scope="col">${t('keys.status')}</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}`;
}
