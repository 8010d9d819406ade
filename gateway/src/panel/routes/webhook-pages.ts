// A project's webhook endpoints in the panel: the list (everyone), adding one and disabling or enabling one
// (operators), an endpoint's attempts log (everyone) and replaying an event from it (operators). Every call names the
// user's organization; an endpoint or event of any other is "not found".
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { currentProject, notFound, type PanelContext, PanelError, signedIn } from '../context.ts';
import type { PanelDeps } from '../dependencies.ts';
import { readForm } from '../form.ts';
import { redirect, renderPage } from '../render.ts';
import type { Notice } from '../views/pages.ts';
import { attemptsView, type WebhookForm, webhooksView } from '../views/webhooks.ts';
import { idParam, isOperator, verifyCsrf } from './guards.ts';
import { found, type Handler, scope } from './project-pages.ts';

function requireOperator(ctx: PanelContext): void {
  if (!isOperator(ctx)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
}

/** The notice after enabling or disabling (the redirect carries the outcome, never text). */
function changeNotice(ctx: PanelContext): Notice | undefined {
  const id = Number(ctx.query.webhook);
  if (!Number.isSafeInteger(id)) return undefined;
  const { t } = ctx.state;
  if (ctx.query.changed === 'enabled') return { kind: 'info', text: t('webhooks.nowEnabled', { id }) };
  if (ctx.query.changed === 'disabled') return { kind: 'info', text: t('webhooks.nowDisabled', { id }) };
  return undefined;
}

async function renderWebhooks(
  deps: PanelDeps,
  ctx: PanelContext,
  extra: { status?: number; notice?: Notice; created?: { id: number; secret: string }; form?: WebhookForm } = {},
): Promise<void> {
  const { t } = ctx.state;
  const project = currentProject(ctx);
  const { webhooks } = await deps.dispatch.call('ListProjectWebhooks', scope(ctx));
  renderPage(ctx, {
    title: t('webhooks.title', { project: project.name }),
    section: 'webhooks',
    ...(extra.status ? { status: extra.status } : {}),
    main: webhooksView(t, {
      project,
      webhooks,
      canManage: isOperator(ctx),
      csrfToken: signedIn(ctx).session.csrfToken,
      ...(extra.notice ? { notice: extra.notice } : {}),
      ...(extra.created ? { created: extra.created } : {}),
      ...(extra.form ? { form: extra.form } : {}),
    }),
  });
}

export const webhooksPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const notice = changeNotice(panel);
  await renderWebhooks(deps, panel, notice ? { notice } : {});
};

/**
 * Adds an endpoint and answers with the list and the new secret, shown this once: the answer is the page itself, not
 * a redirect, so the secret is never in a URL or kept anywhere to show it again.
 */
export const createWebhook: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  requireOperator(panel);
  const { t } = panel.state;
  const url = (form.get('url') ?? '').trim();
  const eventTypes = form.getAll('events');
  try {
    const created = await deps.dispatch.call('CreateProjectWebhook', { ...scope(panel), url, eventTypes });
    const id = created.webhook?.id ?? 0;
    deps.logger.info({ panelUserId: signedIn(panel).access.user.id, webhookId: id, requestId: panel.state.requestId }, 'panel webhook created');
    await renderWebhooks(deps, panel, { created: { id, secret: created.secret } });
  } catch (error) {
    if (error instanceof RemoteError && error.status === status.FAILED_PRECONDITION && error.reason === 'webhook_limit_reached') {
      await renderWebhooks(deps, panel, { status: 409, notice: { kind: 'error', text: t('webhooks.limitReached') }, form: { url, eventTypes, faults: {} } });
      return;
    }
    if (!(error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)) throw error;
    // dispatch-svc names each fault by field; the panel says it in the user's language.
    const faults = {
      ...(error.fields.some((fault) => fault.startsWith('url:')) ? { url: t('webhooks.badUrl') } : {}),
      ...(error.fields.some((fault) => fault.startsWith('event_types:')) ? { eventTypes: t('webhooks.badEvents') } : {}),
    };
    await renderWebhooks(deps, panel, { status: 400, form: { url, eventTypes, faults } });
  }
};

export const setWebhookEnabled: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  requireOperator(panel);
  const webhookId = idParam(panel, 'webhookId');
  const enabled = form.get('enabled');
  if (enabled !== 'true' && enabled !== 'false') throw new PanelError(400, 'error.badRequest', 'error.badRequestText');
  await found(deps.dispatch.call('SetProjectWebhookEnabled', { ...scope(panel), webhookId, enabled: enabled === 'true' }));
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, webhookId, enabled, requestId: panel.state.requestId }, 'panel webhook enabled changed');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/webhooks?changed=${enabled === 'true' ? 'enabled' : 'disabled'}&webhook=${webhookId}`);
};

const replayOutcomes = ['done', 'undelivered'] as const;

function replayNotice(ctx: PanelContext): Notice | undefined {
  const outcome = ctx.query.replay;
  const event = Number(ctx.query.event);
  if (typeof outcome !== 'string' || !(replayOutcomes as readonly string[]).includes(outcome) || !Number.isSafeInteger(event)) return undefined;
  const { t } = ctx.state;
  return outcome === 'done'
    ? { kind: 'info', text: t('attempts.replayed', { event: `evt_${event}` }) }
    : { kind: 'error', text: t('attempts.undelivered', { event: `evt_${event}` }) };
}

const cursorPattern = /^[1-9][0-9]{0,15}$/;

export const webhookAttemptsPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const webhookId = idParam(panel, 'webhookId');
  const before = typeof panel.query.before === 'string' && cursorPattern.test(panel.query.before) ? Number(panel.query.before) : 0;
  const [{ webhooks }, page] = await Promise.all([
    deps.dispatch.call('ListProjectWebhooks', scope(panel)),
    found(deps.dispatch.call('ListProjectWebhookAttempts', { ...scope(panel), webhookId, limit: 50, beforeId: before })),
  ]);
  const webhook = webhooks.find((candidate) => candidate.id === webhookId);
  if (!webhook) throw notFound();
  const notice = replayNotice(panel);
  renderPage(panel, {
    title: t('attempts.title', { id: webhookId }),
    section: 'webhooks',
    main: attemptsView(t, {
      projectId: currentProject(panel).id,
      webhook,
      attempts: page.attempts,
      canReplay: isOperator(panel),
      csrfToken: signedIn(panel).session.csrfToken,
      paged: before > 0,
      older: page.nextBeforeId,
      ...(notice ? { notice } : {}),
    }),
  });
};

export const replayWebhookEvent: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  requireOperator(panel);
  const webhookId = idParam(panel, 'webhookId');
  const eventId = idParam(panel, 'eventId');
  let outcome: (typeof replayOutcomes)[number] = 'done';
  try {
    await found(deps.dispatch.call('ReplayProjectWebhookEvent', { ...scope(panel), webhookId, eventId }));
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.FAILED_PRECONDITION)) throw error;
    outcome = 'undelivered';
  }
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, webhookId, eventId, outcome, requestId: panel.state.requestId }, 'panel webhook replay');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/webhooks/${webhookId}?replay=${outcome}&event=${eventId}`);
};
