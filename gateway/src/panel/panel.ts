// The web panel: server-rendered pages under /panel/ on the gateway, reading from auth-svc and dispatch-svc over gRPC.
// Everything under /panel is answered here, errors included, as HTML in the caller's language with the panel's
// security headers; every other path passes on to the API.

import { status } from '@grpc/grpc-js';
import Router, { type RouterContext } from '@koa/router';
import { OperationalError, RemoteError } from '@notify/platform';
import type { Middleware } from 'koa';
import { isDependencyDown } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { notFound, type PanelContext, PanelError, type PanelState } from './context.ts';
import type { PanelDeps } from './dependencies.ts';
import { translator } from './i18n/texts.ts';
import { renderPage } from './render.ts';
import { eraseRecipient } from './routes/erasure-pages.ts';
import { requireProject, requireSignIn } from './routes/guards.ts';
import { createKey, keysPage, setKeyRate } from './routes/key-pages.ts';
import {
  cancelMessage,
  messagePage,
  messageStatus,
  messagesPage,
  overviewPage,
  requeueMessage,
  setTemplateUnsubscribe,
  templatePage,
  templatePreviewFrame,
  templatesPage,
} from './routes/project-pages.ts';
import { signIn, signInPage, signOut } from './routes/sign-in.ts';
import { removeSuppression, suppressionsPage } from './routes/suppression-pages.ts';
import { createWebhook, replayWebhookEvent, setWebhookEnabled, webhookAttemptsPage, webhooksPage } from './routes/webhook-pages.ts';
import { setPageHeaders } from './security/headers.ts';
import { serveAsset } from './static.ts';
import { errorView, projectsView } from './views/pages.ts';

export type { PanelDeps } from './dependencies.ts';

function routes(deps: PanelDeps): Router<PanelState> {
  // Route names are the labels of the gateway's HTTP metrics and access log.
  const router = new Router<PanelState>({ sensitive: true, strict: true });
  const page = requireSignIn(deps);
  const project = requireProject();
  router.get('panel.static', '/panel/static/:file', (ctx) => {
    if (!serveAsset(ctx as PanelContext, ctx.params.file ?? '')) throw notFound();
  });
  router.get('panel.root', '/panel', (ctx) => ctx.redirect('/panel/'));
  router.get('panel.sign-in', '/panel/sign-in', signInPage());
  router.post('panel.sign-in', '/panel/sign-in', signIn(deps));
  router.post('panel.sign-out', '/panel/sign-out', page, signOut(deps));
  router.get('panel.projects', '/panel/', page, (ctx) => {
    const panel = ctx as PanelContext;
    const { t, access } = panel.state;
    if (!access) throw notFound();
    renderPage(panel, { title: t('nav.projects'), main: projectsView(t, access.organization, access.projects) });
  });
  const projectPath = '/panel/projects/:projectId';
  router.get('panel.overview', projectPath, page, project, overviewPage(deps));
  router.get('panel.messages', `${projectPath}/messages`, page, project, messagesPage(deps));
  router.get('panel.message', `${projectPath}/messages/:messageId`, page, project, messagePage(deps));
  router.get('panel.message-status', `${projectPath}/messages/:messageId/status`, requireSignIn(deps, { json: true }), project, messageStatus(deps));
  router.post('panel.requeue', `${projectPath}/messages/:messageId/requeue`, page, project, requeueMessage(deps));
  router.post('panel.cancel', `${projectPath}/messages/:messageId/cancel`, page, project, cancelMessage(deps));
  router.get('panel.templates', `${projectPath}/templates`, page, project, templatesPage(deps));
  router.get('panel.template', `${projectPath}/templates/:slug`, page, project, templatePage(deps));
  router.get('panel.template-preview', `${projectPath}/templates/:slug/preview`, page, project, templatePreviewFrame(deps));
  router.post('panel.template-unsubscribe', `${projectPath}/templates/:slug/unsubscribe`, page, project, setTemplateUnsubscribe(deps));
  router.get('panel.keys', `${projectPath}/keys`, page, project, keysPage(deps));
  router.post('panel.key-rate', `${projectPath}/keys/:keyId/rate`, page, project, setKeyRate(deps));
  router.post('panel.key-create', `${projectPath}/keys`, page, project, createKey(deps));
  router.get('panel.webhooks', `${projectPath}/webhooks`, page, project, webhooksPage(deps));
  router.post('panel.webhook-create', `${projectPath}/webhooks`, page, project, createWebhook(deps));
  router.get('panel.webhook-attempts', `${projectPath}/webhooks/:webhookId`, page, project, webhookAttemptsPage(deps));
  router.post('panel.webhook-enabled', `${projectPath}/webhooks/:webhookId/enabled`, page, project, setWebhookEnabled(deps));
  router.post('panel.webhook-replay', `${projectPath}/webhooks/:webhookId/events/:eventId/replay`, page, project, replayWebhookEvent(deps));
  router.get('panel.suppressions', `${projectPath}/suppressions`, page, project, suppressionsPage(deps));
  router.post('panel.suppression-remove', `${projectPath}/suppressions/remove`, page, project, removeSuppression(deps));
  router.post('panel.erase', `${projectPath}/erase`, page, project, eraseRecipient(deps));
  return router;
}

/** The page for a failure: the handler's own PanelError, 503 when a dependency is down, else 500 (a bug, logged). */
function errorPage(ctx: PanelContext, error: unknown, deps: PanelDeps): void {
  let failure: PanelError;
  if (error instanceof PanelError) failure = error;
  else if (isDependencyDown(error) || error instanceof OperationalError) {
    deps.logger.warn({ requestId: ctx.state.requestId, err: error }, 'the panel could not reach a dependency');
    failure = new PanelError(503, 'error.unavailable', 'error.unavailableText', { headers: { 'Retry-After': '5' } });
  } else if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT) {
    failure = new PanelError(400, 'error.badRequest', 'error.badRequestText');
  } else {
    deps.logger.error({ requestId: ctx.state.requestId, err: error }, 'panel request failed unexpectedly');
    failure = new PanelError(500, 'error.internal', 'error.internalText');
  }
  const { t } = ctx.state;
  // A JSON client (live.js) gets the status alone.
  if (ctx.path.endsWith('/status')) {
    ctx.status = failure.status;
    ctx.set(failure.headers);
    ctx.body = { error: failure.status };
    return;
  }
  ctx.set(failure.headers);
  renderPage(ctx, {
    status: failure.status,
    title: t(failure.title),
    main: errorView(t, t(failure.title), t(failure.text, { requestId: ctx.state.requestId }), ctx.state.access !== undefined),
  });
}

/** 405 with Allow for a known path asked with another method, 404 for any other path under /panel. */
function unmatched(ctx: PanelContext): never {
  const allowed = [...new Set(((ctx as unknown as RouterContext).matched ?? []).flatMap((layer) => layer.methods))];
  if (allowed.length > 0) throw new PanelError(405, 'error.badRequest', 'error.badRequestText', { headers: { Allow: allowed.join(', ') } });
  throw notFound();
}

export function createPanel(deps: PanelDeps): Middleware<GatewayState> {
  const handle = routes(deps).routes();
  return async (ctx, next) => {
    if (ctx.path !== '/panel' && !ctx.path.startsWith('/panel/')) return next();
    const panel = ctx as unknown as PanelContext;
    panel.state.t = translator(ctx.state.language);
    panel.state.secureCookies = deps.cookieSecure || ctx.secure;
    setPageHeaders(panel);
    // Pages differ by language; caches in between must not hand one language's page to another.
    ctx.vary('Accept-Language');
    try {
      await handle(panel, async () => unmatched(panel));
    } catch (error) {
      errorPage(panel, error, deps);
    }
  };
}
