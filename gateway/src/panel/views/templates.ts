// Templates, read-only: the list, and one template with its source and a preview rendered with sample data. The
// preview's HTML part is shown in a sandboxed frame whose document the panel serves with a sandbox CSP of its own.
import type { dispatch } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { csrfField } from '../security/csrf.ts';
import { timeElement, timeText } from './format.ts';
import { type Html, html } from './html.ts';

export function templatesView(t: Translate, project: { id: number; name: string }, templates: readonly dispatch.Template__Output[]): Html {
  const rows = templates.map(
    (template) => html`<tr>
  <td><a href="/panel/projects/${project.id}/templates/${template.slug}">${template.slug}</a></td>
  <td>${template.version}</td>
  <td>${template.active ? t('templates.yes') : t('templates.no')}</td>
  <td>${template.unsubscribe ? t('templates.yes') : t('templates.no')}</td>
  <td>${timeElement(template.updatedAt)}</td>
</tr>`,
  );
  return html`<h1>${t('templates.title', { project: project.name })}</h1>
${
  templates.length === 0
    ? html`<p>${t('templates.none')}</p>`
    : html`<table>
  <caption>${t('templates.caption')}</caption>
  <thead><tr><th scope="col">${t('templates.slug')}</th><th scope="col">${t('templates.version')}</th><th scope="col">${t('templates.active')}</th><th scope="col">${t('templates.unsubscribe')}</th><th scope="col">${t('templates.updated')}</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}`;
}

export function templateView(
  t: Translate,
  options: {
    projectId: number;
    preview: dispatch.TemplatePreview__Output;
    /** The sample data as typed, when it could not be used. */
    typedData?: string;
    dataFault?: string;
    /** For an operator: the session's CSRF token, for the form that switches one-click unsubscribe. */
    csrfToken?: string;
    /** The switch was just changed (the redirect after the form says so). */
    unsubscribeChanged?: boolean;
  },
): Html {
  const { preview, projectId } = options;
  const template = preview.template;
  if (!template) return html``;
  const base = `/panel/projects/${projectId}/templates/${template.slug}`;
  const data = options.typedData ?? preview.dataJson;
  const frameQuery = new URLSearchParams({ data: preview.dataJson }).toString();
  const rendered = options.dataFault
    ? undefined
    : preview.renderError
      ? html`<p class="notice notice-error" role="alert">${t('template.renderError', { reason: preview.renderError })}</p>`
      : html`<h3>${t('template.subject')}</h3>
<p class="rendered-subject">${preview.subject}</p>
<h3>${t('template.html')}</h3>
<iframe class="rendered-html" sandbox="" src="${base}/preview?${frameQuery}" title="${t('template.htmlFrame')}"></iframe>
<h3>${t('template.text')}</h3>
<pre class="rendered-text">${preview.text}</pre>`;
  const faults =
    preview.dataFaults.length > 0 && !options.dataFault
      ? html`<div class="notice notice-info" role="status"><p>${t('template.dataFaults')}</p><ul>${preview.dataFaults.map((fault) => html`<li>${fault}</li>`)}</ul></div>`
      : undefined;
  return html`<h1>${t('template.title', { slug: template.slug })}</h1>
<p>${t('template.facts', { version: template.version, state: template.active ? t('template.active') : t('template.inactive'), time: timeText(template.updatedAt) })}</p>
${options.unsubscribeChanged ? html`<p class="notice notice-info" role="status">${t('template.unsubscribeChanged')}</p>` : undefined}
<p>${template.unsubscribe ? t('template.unsubscribeOn') : t('template.unsubscribeOff')}</p>
${
  options.csrfToken === undefined
    ? undefined
    : html`<form method="post" action="${base}/unsubscribe" class="inline">
  <input type="hidden" name="${csrfField}" value="${options.csrfToken}">
  <input type="hidden" name="unsubscribe" value="${template.unsubscribe ? 'false' : 'true'}">
  <button type="submit">${template.unsubscribe ? t('template.unsubscribeDisable') : t('template.unsubscribeEnable')}</button>
</form>`
}
<h2>${t('template.preview')}</h2>
<form method="get" action="${base}" class="preview-data">
  <p class="field"><label for="data">${t('template.sampleData')}</label>
  <textarea id="data" name="data" rows="8" spellcheck="false" aria-describedby="data-hint${options.dataFault ? ' data-fault' : ''}"${options.dataFault ? html` aria-invalid="true"` : undefined}>${data}</textarea>
  <span class="hint" id="data-hint">${t('template.sampleHint')}</span>
  ${options.dataFault ? html`<span class="fault" id="data-fault">${options.dataFault}</span>` : undefined}</p>
  <p><button type="submit">${t('template.render')}</button></p>
</form>
${faults}
${rendered}
<h2>${t('template.source')}</h2>
<h3>${t('template.subject')}</h3>
<pre>${template.subject}</pre>
<h3>${t('template.html')}</h3>
<pre>${template.html}</pre>
<h3>${t('template.text')}</h3>
<pre>${template.text}</pre>`;
}
