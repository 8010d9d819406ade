// The gateway's Koa application: built from its dependencies, never listening itself (main.ts or a test binds it).
import Router from '@koa/router';
import type { Logger, Registry } from '@notify/platform';
import Koa from 'koa';
import { createApiKeyRoute, listApiKeysRoute, revokeApiKeyRoute } from './api-keys/routes.ts';
import type { AuthClient } from './auth/authorize.ts';
import type { BruteForceGuard } from './auth/brute-force-guard.ts';
import type { CachedAuthorizer } from './auth/cached-authorizer.ts';
import { registerDomainRoutes } from './domains/routes.ts';
import { handleErrors } from './errors/error-handler.ts';
import { healthz, type ReadinessChecks, readyz } from './http/health.ts';
import { observe } from './http/observe.ts';
import { requestContext } from './http/request-context.ts';
import type { GatewayState } from './http/state.ts';
import { unmatched } from './http/unmatched.ts';
import { messageReader } from './messages/get-many.ts';
import { cancelMessageRoute, getMessageRoute, listMessagesRoute } from './messages/read-route.ts';
import { docsRoutes } from './openapi/docs.ts';
import { openApiPath, openApiRoute } from './openapi/route.ts';
import { createPanel, type PanelDeps } from './panel/panel.ts';
import type { SendRateLimiter } from './rate-limit/limiter.ts';
import { sendBatchRoute } from './send/batch-route.ts';
import type { DispatchClient } from './send/dispatch.ts';
import { countSendOutcomes, sendOutcomesCounter } from './send/outcomes.ts';
import { monthlyUsageMemory, sendRoute } from './send/route.ts';
import { type SendManyOptions, sendDispatcher, sendManyDefaults } from './send/send-many.ts';
import { registerStatsRoutes } from './stats/routes.ts';
import { addSuppressionsRoute, listSuppressionsRoute, removeSuppressionRoute } from './suppressions/routes.ts';
import { registerTemplateRoutes } from './templates/routes.ts';
import { type UnsubscribeDeps, unsubscribeOneClick, unsubscribePage, unsubscribePath } from './unsubscribe/unsubscribe-routes.ts';
import { registerWebhookRoutes } from './webhooks/routes.ts';

export interface GatewayDeps {
  readonly auth: AuthClient;
  /** Accepted keys answered from memory (AUTH_CACHE_TTL); absent, every send asks auth-svc. */
  readonly authorizations?: CachedAuthorizer;
  readonly dispatch: DispatchClient;
  /** DISPATCH_SEND_MAX_ITEMS and DISPATCH_SEND_CALLS: how single sends are carried in SendMany calls; absent, the defaults. */
  readonly sendMany?: SendManyOptions;
  readonly rateLimiter: SendRateLimiter;
  /** NOTIFY_PUBLIC_READ_RATE: the reads' own bucket (policy `read`), apart from the sends'. */
  readonly readRateLimiter: SendRateLimiter;
  /** Limits failed authentications per client address (NOTIFY_AUTH_FAILURE_RATE); absent, they are not limited. */
  readonly bruteForce?: BruteForceGuard;
  /**
   * TRUSTED_PROXY_HOPS: reverse proxies in front of the gateway that append to X-Forwarded-For. The client address is the
   * entry that many from the end; with 0 (the default) it is the TCP peer and X-Forwarded-For is ignored.
   */
  readonly trustedProxyHops?: number;
  /** Served on GET /readyz; the same checks runService serves on the ops port. */
  readonly readiness: ReadinessChecks;
  readonly logger: Logger;
  /** Where the HTTP metrics are registered (the service's registry, or a test's own). */
  readonly registry: Registry;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
  /** NOTIFY_MAX_BATCH_BODY_BYTES. */
  readonly maxBatchBodyBytes: number;
  /** The web panel under /panel/; absent, those paths are the API's 404s. */
  readonly panel?: PanelDeps;
  /** One-click unsubscribe (RFC 8058) under /u/; absent, those paths are the API's 404s. */
  readonly unsubscribe?: UnsubscribeDeps;
}

export type { ReadinessChecks } from './http/health.ts';
export type { GatewayState } from './http/state.ts';

export function createApp(deps: GatewayDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  // ctx.ip, the address failed authentications are counted against: X-Forwarded-For entries written by anyone but the
  // trusted proxies are the client's own claims, so only the last `trustedProxyHops` are looked at.
  const trustedProxyHops = deps.trustedProxyHops ?? 0;
  app.proxy = trustedProxyHops > 0;
  app.maxIpsCount = trustedProxyHops;
  // Errors never reach Koa's default handler (handleErrors answers them all); this only sees failures writing a response.
  app.on('error', (error: unknown) => deps.logger.error({ err: error }, 'response failed'));

  // Route names are the labels of metrics and log lines; the send route answers with and without the trailing slash.
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const usage = monthlyUsageMemory(deps.dispatch);
  const outcomes = sendOutcomesCounter(deps.registry);
  const sends = sendDispatcher(deps.dispatch, { ...(deps.sendMany ?? sendManyDefaults), registry: deps.registry });
  const send = [countSendOutcomes(outcomes), sendRoute(deps, sends, usage)] as const;
  router.post('/api/v1/send/', '/api/v1/send/', ...send);
  router.post('/api/v1/send/', '/api/v1/send', ...send);
  const batch = [countSendOutcomes(outcomes), sendBatchRoute(deps, usage, outcomes)] as const;
  router.post('/api/v1/send/batch/', '/api/v1/send/batch/', ...batch);
  router.post('/api/v1/send/batch/', '/api/v1/send/batch', ...batch);
  const list = listMessagesRoute(deps);
  const get = getMessageRoute(deps, messageReader(deps.dispatch, deps.registry));
  router.get('/api/v1/messages/', '/api/v1/messages/', list);
  router.get('/api/v1/messages/', '/api/v1/messages', list);
  router.get('/api/v1/messages/{message_id}/', '/api/v1/messages/:messageId/', get);
  router.get('/api/v1/messages/{message_id}/', '/api/v1/messages/:messageId', get);
  const cancel = cancelMessageRoute(deps);
  router.delete('/api/v1/messages/{message_id}/', '/api/v1/messages/:messageId/', cancel);
  router.delete('/api/v1/messages/{message_id}/', '/api/v1/messages/:messageId', cancel);
  const keys = { list: listApiKeysRoute(deps), create: createApiKeyRoute(deps), revoke: revokeApiKeyRoute(deps) };
  for (const path of ['/api/v1/api-keys/', '/api/v1/api-keys']) {
    router.get('/api/v1/api-keys/', path, keys.list);
    router.post('/api/v1/api-keys/', path, keys.create);
  }
  router.delete('/api/v1/api-keys/{id}/', '/api/v1/api-keys/:keyId/', keys.revoke);
  router.delete('/api/v1/api-keys/{id}/', '/api/v1/api-keys/:keyId', keys.revoke);
  const suppressions = { list: listSuppressionsRoute(deps), add: addSuppressionsRoute(deps), remove: removeSuppressionRoute(deps) };
  for (const path of ['/api/v1/suppressions/', '/api/v1/suppressions']) {
    router.get('/api/v1/suppressions/', path, suppressions.list);
    router.post('/api/v1/suppressions/', path, suppressions.add);
  }
  router.delete('/api/v1/suppressions/{address}/', '/api/v1/suppressions/:address/', suppressions.remove);
  router.delete('/api/v1/suppressions/{address}/', '/api/v1/suppressions/:address', suppressions.remove);
  registerDomainRoutes(router, deps);
  registerWebhookRoutes(router, deps);
  registerTemplateRoutes(router, deps);
  registerStatsRoutes(router, deps);
  router.get('/healthz', '/healthz', healthz());
  router.get('/readyz', '/readyz', readyz(deps.readiness));
  router.get(openApiPath, openApiPath, openApiRoute());
  const docs = docsRoutes();
  router.get('/docs', '/docs', docs.page);
  router.get('/docs', '/docs/', docs.redirect);
  router.get('/docs/:file', '/docs/:file', docs.asset);
  if (deps.unsubscribe) {
    router.get('/u/{token}', unsubscribePath, unsubscribePage(deps.unsubscribe));
    router.post('/u/{token}', unsubscribePath, unsubscribeOneClick(deps.unsubscribe));
  }

  app.use(handleErrors(deps.logger));
  app.use(requestContext());
  app.use(observe({ registry: deps.registry, logger: deps.logger }));
  if (deps.panel) app.use(createPanel(deps.panel));
  app.use(router.routes());
  app.use(unmatched());
  return app;
}
