// The pages that are mostly text: sign-in, the organization's projects, and error pages.
import type { auth } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { timeElement } from './format.ts';
import { type Html, html } from './html.ts';

export interface Notice {
  readonly kind: 'error' | 'info';
  readonly text: string;
}

/** role=alert for errors (announced at once), role=status for information. */
export function notice(value: Notice | undefined): Html | undefined {
  if (!value) return undefined;
  return value.kind === 'error'
    ? html`<p class="notice notice-error" role="alert">${value.text}</p>`
    : html`<p class="notice notice-info" role="status">${value.text}</p>`;
}

export function signInView(t: Translate, form: { csrfToken: string; email: string; next: string; notice?: Notice }): Html {
  return html`<h1>${t('signIn.title')}</h1>
<p>${t('signIn.intro')}</p>
${notice(form.notice)}
<form method="post" action="/panel/sign-in" class="sign-in">
  <input type="hidden" name="${csrfField}" value="${form.csrfToken}">
  <input type="hidden" name="next" value="${form.next}">
  <p><label for="email">${t('signIn.email')}</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${form.email}"${form.email ? undefined : html` autofocus`}></p>
  <p><label for="password">${t('signIn.password')}</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${form.email ? html` autofocus` : undefined}></p>
  <p><button type="submit">${t('signIn.submit')}</button></p>
</form>`;
}

export function projectsView(t: Translate, organization: auth.Organization__Output, projects: readonly auth.Project__Output[]): Html {
  const rows = projects.map(
    (project) =>
      html`<tr><td><a href="/panel/projects/${project.id}">${project.name}</a></td><td>${project.id}</td><td>${timeElement(project.createdAt)}</td></tr>`,
  );
  // Read-only here: an operator changes it with notifyctl org update --retention.
  const retention =
    organization.messageRetention === '' ? t('projects.retentionDefault') : t('projects.retention', { retention: organization.messageRetention });
  return html`<h1>${t('projects.title', { organization: organization.name })}</h1>
<p class="retention">${retention}</p>
${
  projects.length === 0
    ? html`<p>${t('projects.none')}</p>`
    : html`<table>
  <caption>${t('projects.caption')}</caption>
  <thead><tr><th scope="col">${t('projects.name')}</th><th scope="col">${t('projects.id')}</th><th scope="col">${t('projects.created')}</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}`;
}

export function errorView(t: Translate, title: string, text: string, signedIn: boolean): Html {
  return html`<h1>${title}</h1>
<p>${text}</p>
${signedIn ? html`<p><a href="/panel/">${t('error.back')}</a></p>` : html`<p><a href="/panel/sign-in">${t('signIn.title')}</a></p>`}`;
}
