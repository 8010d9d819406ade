// A project's API keys: prefix, kind (live or test), scopes, the sending domains it is limited to (set over the API or
// with notifyctl, shown here only), send rate, use and state; operators make a key with the
// scopes they choose (its secret shown on the answer, once) and set a key's send rate here.
import { type auth, scopes } from '@notify/proto';
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
  /** Just created: the one time its secret is shown. */
  readonly created?: { readonly prefix: string; readonly secret: string };
}

/** An operator's form for a new key: a name, its scopes (`sending` ticked), live or test. */
function createForm(t: Translate, projectId: number, csrfToken: string): Html {
  const boxes = scopes.map((scope) => {
    const id = `scope-${scope.replace(':', '-')}`;
    const ticked = scope === 'send' || scope === 'messages:read';
    return html`<li><input type="checkbox" id="${id}" name="scopes" value="${scope}"${ticked ? html` checked` : undefined}> <label for="${id}"><code>${scope}</code></label></li>`;
  });
  return html`<h2>${t('keys.create')}</h2>
<form method="post" action="/panel/projects/${projectId}/keys" class="key-create">
  <input type="hidden" name="${csrfField}" value="${csrfToken}">
  <p class="field"><label for="key-name">${t('keys.name')}</label> <input id="key-name" name="name" required maxlength="200"></p>
  <fieldset>
  <legend>${t('keys.scopes')}</legend>
  <span class="hint">${t('keys.scopesHint')}</span>
  <ul class="scopes">${boxes}</ul>
  </fieldset>
  <p class="field"><input type="checkbox" id="key-test" name="test" value="true"> <label for="key-test">${t('keys.testHint')}</label></p>
  <button type="submit">${t('keys.createButton')}</button>
</form>`;
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
  <td>${key.scopes.map((scope, index) => html`${index > 0 ? ', ' : undefined}<code>${scope}</code>`)}</td>
  <td>${key.fromDomains.length === 0 ? t('keys.anyDomain') : key.fromDomains.map((domain, index) => html`${index > 0 ? ', ' : undefined}<code>${domain}</code>`)}</td>
  <td>${rateCell(t, options, key)}</td>
  <td>${timeElement(key.createdAt)}</td>
  <td>${timeElement(key.lastUsedAt, t('keys.never'))}</td>
  <td>${key.revokedAt ? html`<span class="revoked">${t('keys.revoked')} ${timeElement(key.revokedAt)}</span>` : t('keys.active')}</td>
</tr>`,
  );
  const created = options.created;
  return html`<h1>${t('keys.title', { project: options.project })}</h1>
${notice(options.notice)}
${
  created
    ? html`<div class="notice notice-info" role="status">
  <p>${t('keys.added', { prefix: created.prefix })}</p>
  <p><label for="secret">${t('keys.secret')}</label> <input id="secret" class="secret" type="text" readonly value="${created.secret}" size="70"></p>
</div>`
    : undefined
}
<p>${t('keys.note')}</p>
${
  options.keys.length === 0
    ? html`<p>${t('keys.none')}</p>`
    : html`<table>
  <caption>${t('keys.caption')}</caption>
  <thead><tr><th scope="col">${t('keys.name')}</th><th scope="col">${t('keys.prefix')}</th><th scope="col">${t('keys.kind')}</th><th scope="col">${t('keys.scopes')}</th><th scope="col">${t('keys.fromDomains')}</th><th scope="col">${t('keys.rate')}</th><th scope="col">${t('keys.created')}</th><th scope="col">${t('keys.lastUsed')}</th><th scope="col">${t('keys.status')}</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
${options.csrfToken === undefined ? undefined : createForm(t, options.projectId, options.csrfToken)}`;
}
