// The frame of every panel page: language, title, skip link, who is signed in, the project's sections, the main area.
import type { Language } from '../../i18n/messages.ts';
import type { PanelAccess } from '../context.ts';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { assetUrl } from '../static.ts';
import { type Html, html } from './html.ts';

export type Section = 'overview' | 'messages' | 'templates' | 'keys' | 'webhooks' | 'suppressions';

export interface PageFrame {
  readonly t: Translate;
  readonly language: Language;
  readonly title: string;
  readonly main: Html;
  /** Present when someone is signed in. */
  readonly signedIn?: { readonly access: PanelAccess; readonly csrfToken: string };
  readonly project?: { readonly id: number; readonly name: string; readonly section: Section };
  /** The page follows a message live (loads live.js). */
  readonly live?: boolean;
}

const sections: readonly {
  section: Section;
  path: string;
  label: 'nav.overview' | 'nav.messages' | 'nav.templates' | 'nav.keys' | 'nav.webhooks' | 'nav.suppressions';
}[] = [
  { section: 'overview', path: '', label: 'nav.overview' },
  { section: 'messages', path: '/messages', label: 'nav.messages' },
  { section: 'templates', path: '/templates', label: 'nav.templates' },
  { section: 'keys', path: '/keys', label: 'nav.keys' },
  { section: 'webhooks', path: '/webhooks', label: 'nav.webhooks' },
  { section: 'suppressions', path: '/suppressions', label: 'nav.suppressions' },
];

function header(frame: PageFrame): Html {
  const { t, signedIn } = frame;
  if (!signedIn) return html`<header class="top"><p class="brand">${t('app.name')}</p></header>`;
  const { user, organization } = signedIn.access;
  const role = user.role === 'operator' ? t('role.operator') : t('role.viewer');
  return html`<header class="top">
  <a class="brand" href="/panel/">${t('app.name')}</a>
  <p class="who">${t('session.who', { email: user.email, role, organization: organization.name })}</p>
  <form method="post" action="/panel/sign-out" class="sign-out">
    <input type="hidden" name="${csrfField}" value="${signedIn.csrfToken}">
    <button type="submit">${t('session.signOut')}</button>
  </form>
</header>`;
}

function navigation(frame: PageFrame): Html | undefined {
  const { project, t } = frame;
  if (!project) return undefined;
  const base = `/panel/projects/${project.id}`;
  const links = sections.map(({ section, path, label }) =>
    section === project.section
      ? html`<li><a href="${base}${path}" aria-current="page">${t(label)}</a></li>`
      : html`<li><a href="${base}${path}">${t(label)}</a></li>`,
  );
  return html`<nav class="sections" aria-label="${t('nav.label')}">
  <p class="project"><a href="/panel/">${t('nav.projects')}</a> / <span>${project.name}</span></p>
  <ul>${links}</ul>
</nav>`;
}

export function page(frame: PageFrame): string {
  const { t } = frame;
  return html`<!doctype html>
<html lang="${frame.language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · ${t('app.name')}</title>
<link rel="stylesheet" href="${assetUrl('panel.css')}">
${frame.live ? html`<script src="${assetUrl('live.js')}" defer></script>` : undefined}
</head>
<body>
<a class="skip" href="#main">${t('nav.skip')}</a>
${header(frame)}
${navigation(frame)}
<main id="main" tabindex="-1">
${frame.main}
</main>
</body>
</html>
`.toString();
}
