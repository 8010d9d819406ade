// The pages of one project: overview (and, for operators, the erasure form of erasure-pages.ts), messages, a message
// (and its live status), re-queue, cancel, templates (and the operator's one-click unsubscribe switch); its keys are in
// key-pages.ts. Every call names the user's organization, and whatever is not found in it is "not found".
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { Middleware } from 'koa';
import { currentProject, notFound, type PanelContext, PanelError, type PanelState, signedIn } from '../context.ts';
import type { PanelDeps } from '../dependencies.ts';
import { readForm } from '../form.ts';
import type { PanelTextKey } from '../i18n/texts.ts';
import { redirect, renderPage } from '../render.ts';
import { setPreviewHeaders } from '../security/headers.ts';
import { traceUrl } from '../trace-link.ts';
import { erasureForm } from '../views/erasure.ts';
import { html } from '../views/html.ts';
import { liveStatus, messageView } from '../views/message.ts';
import { filterQuery, messagesView } from '../views/messages.ts';
import { overviewView } from '../views/overview.ts';
import type { Notice } from '../views/pages.ts';
import { templatesView, templateView } from '../views/templates.ts';
import { idParam, isOperator, verifyCsrf } from './guards.ts';
import { parseFilters } from './message-filters.ts';

export type Handler = (deps: PanelDeps) => Middleware<PanelState>;

export function scope(ctx: PanelContext): { projectId: number; organizationId: number } {
  return { projectId: currentProject(ctx).id, organizationId: signedIn(ctx).access.organization.id };
}

/** NOT_FOUND from a service is the panel's "not found"; anything else goes on to the error page. */
export async function found<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof RemoteError && error.status === status.NOT_FOUND) throw notFound();
    throw error;
  }
}

const requeueOutcomes = ['done', 'not_failed', 'template_inactive', 'recipient_suppressed', 'message_not_found'] as const;

/** The notice after a re-queue (the redirect carries its outcome, never text). */
function requeueNotice(ctx: PanelContext): Notice | undefined {
  const outcome = ctx.query.requeue;
  const id = Number(ctx.query.message);
  if (typeof outcome !== 'string' || !(requeueOutcomes as readonly string[]).includes(outcome) || !Number.isSafeInteger(id)) return undefined;
  const { t } = ctx.state;
  if (outcome === 'done') return { kind: 'info', text: t('message.requeued', { id }) };
  return { kind: 'error', text: t('message.notRequeued', { id, reason: t(`requeue.${outcome}` as PanelTextKey) }) };
}

const cancelOutcomes = ['done', 'not_cancelable'] as const;

/** The notice after a cancel, like requeueNotice's. */
function cancelNotice(ctx: PanelContext): Notice | undefined {
  const outcome = ctx.query.cancel;
  const id = Number(ctx.query.message);
  if (typeof outcome !== 'string' || !(cancelOutcomes as readonly string[]).includes(outcome) || !Number.isSafeInteger(id)) return undefined;
  const { t } = ctx.state;
  return outcome === 'done' ? { kind: 'info', text: t('message.canceled', { id }) } : { kind: 'error', text: t('message.notCanceled', { id }) };
}

export const overviewPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const [overview, failed] = await Promise.all([
    deps.dispatch.call('GetOverview', scope(panel)),
    deps.dispatch.call('SearchMessages', { ...scope(panel), state: 'failed', limit: 10 }),
  ]);
  const project = currentProject(panel);
  const notice = requeueNotice(panel);
  renderPage(panel, {
    title: t('overview.title', { project: project.name }),
    section: 'overview',
    main: html`${overviewView(t, { project, overview, failed: failed.messages, canRequeue: isOperator(panel), csrfToken: signedIn(panel).session.csrfToken, ...(notice ? { notice } : {}) })}
${isOperator(panel) ? erasureForm(t, { projectId: project.id, csrfToken: signedIn(panel).session.csrfToken }) : undefined}`,
  });
};

export const messagesPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const project = currentProject(panel);
  const { filters, faults, search } = parseFilters(ctx.query, t);
  const invalid = Object.keys(faults).length > 0;
  const [templates, page] = await Promise.all([
    deps.dispatch.call('ListProjectTemplates', scope(panel)),
    // With a mistake in the form, the page shows the mistake rather than results for filters nobody asked for.
    invalid ? Promise.resolve({ messages: [], nextCursor: '' }) : deps.dispatch.call('SearchMessages', { ...scope(panel), ...search, limit: 50 }),
  ]);
  renderPage(panel, {
    title: t('messages.title', { project: project.name }),
    section: 'messages',
    status: invalid ? 400 : 200,
    main: messagesView(t, {
      project,
      filters,
      faults,
      templates: templates.templates.map((template) => template.slug),
      messages: page.messages,
      paged: search.cursor !== '',
      ...(page.nextCursor ? { older: filterQuery(filters, { before: page.nextCursor }) } : {}),
    }),
  });
};

async function messageOf(deps: PanelDeps, ctx: PanelContext) {
  const view = await found(deps.dispatch.call('GetMessageView', { ...scope(ctx), messageId: idParam(ctx, 'messageId') }));
  if (!view.message) throw notFound();
  return { view, message: view.message };
}

export const messagePage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const { view, message } = await messageOf(deps, panel);
  const notice = requeueNotice(panel) ?? cancelNotice(panel);
  renderPage(panel, {
    title: t('message.title', { id: message.id }),
    section: 'messages',
    live: true,
    main: messageView(t, {
      projectId: currentProject(panel).id,
      view,
      message,
      traceUrl: traceUrl(deps.traceUrlTemplate, message.traceId),
      canRequeue: isOperator(panel),
      csrfToken: signedIn(panel).session.csrfToken,
      ...(notice ? { notice } : {}),
    }),
  });
};

/** The small JSON document live.js polls while a message page is open. */
export const messageStatus: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { message } = await messageOf(deps, panel);
  ctx.body = liveStatus(panel.state.t, message);
};

export const requeueMessage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const messageId = idParam(panel, 'messageId');
  const result = await found(deps.dispatch.call('RequeueMessage', { ...scope(panel), messageId }));
  const outcome = result.requeued.includes(messageId) ? 'done' : (result.skipped[0]?.reason ?? 'message_not_found');
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, messageId, outcome, requestId: panel.state.requestId }, 'panel re-queue');
  const project = currentProject(panel).id;
  const query = `requeue=${encodeURIComponent(outcome)}&message=${messageId}`;
  redirect(panel, form.get('back') === 'overview' ? `/panel/projects/${project}?${query}` : `/panel/projects/${project}/messages/${messageId}?${query}`);
};

/** An operator's cancel of a scheduled message; one no longer scheduled comes back with a notice saying so. */
export const cancelMessage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const messageId = idParam(panel, 'messageId');
  let outcome: (typeof cancelOutcomes)[number] = 'done';
  try {
    await found(deps.dispatch.call('CancelProjectMessage', { ...scope(panel), messageId }));
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.FAILED_PRECONDITION && error.reason === 'not_cancelable')) throw error;
    outcome = 'not_cancelable';
  }
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, messageId, outcome, requestId: panel.state.requestId }, 'panel cancel');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/messages/${messageId}?cancel=${outcome}&message=${messageId}`);
};

export const templatesPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const project = currentProject(panel);
  const { templates } = await deps.dispatch.call('ListProjectTemplates', scope(panel));
  renderPage(panel, { title: t('templates.title', { project: project.name }), section: 'templates', main: templatesView(t, project, templates) });
};

const slugPattern = /^[A-Za-z0-9_-]{1,100}$/;

function previewRequest(ctx: PanelContext): { projectId: number; organizationId: number; slug: string; dataJson: string } {
  const slug = ctx.params.slug ?? '';
  if (!slugPattern.test(slug)) throw notFound();
  const data = ctx.query.data;
  return { ...scope(ctx), slug, dataJson: typeof data === 'string' ? data : '' };
}

export const templatePage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const request = previewRequest(panel);
  let preview: dispatch.TemplatePreview__Output;
  let dataFault: string | undefined;
  try {
    preview = await found(deps.dispatch.call('PreviewTemplate', request));
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)) throw error;
    // Sample data that is not a JSON object: the page shows the sample made from the schema, and the mistake.
    dataFault = t('template.badData');
    preview = await found(deps.dispatch.call('PreviewTemplate', { ...request, dataJson: '' }));
  }
  renderPage(panel, {
    title: t('template.title', { slug: request.slug }),
    section: 'templates',
    ...(dataFault ? { status: 400 } : {}),
    main: templateView(t, {
      projectId: request.projectId,
      preview,
      ...(dataFault ? { dataFault, typedData: request.dataJson } : {}),
      ...(isOperator(panel) ? { csrfToken: signedIn(panel).session.csrfToken } : {}),
      unsubscribeChanged: panel.query.changed === 'unsubscribe',
    }),
  });
};

/** An operator's switch for the template's one-click unsubscribe headers; no new version is made. */
export const setTemplateUnsubscribe: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const slug = panel.params.slug ?? '';
  if (!slugPattern.test(slug)) throw notFound();
  const unsubscribe = form.get('unsubscribe');
  if (unsubscribe !== 'true' && unsubscribe !== 'false') throw new PanelError(400, 'error.badRequest', 'error.badRequestText');
  await found(deps.dispatch.call('SetProjectTemplateUnsubscribe', { ...scope(panel), slug, unsubscribe: unsubscribe === 'true' }));
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, slug, unsubscribe, requestId: panel.state.requestId }, 'panel template unsubscribe changed');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/templates/${slug}?changed=unsubscribe`);
};

/** The rendered HTML part alone, for the sandboxed frame of the template page: a document of its own, its own CSP. */
export const templatePreviewFrame: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const preview = await found(deps.dispatch.call('PreviewTemplate', previewRequest(panel)));
  setPreviewHeaders(panel);
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = preview.renderError ? '' : preview.html;
};
