// One access-log line and the HTTP metrics per request, recorded when the response has left (so the status is final,
// whichever middleware set it). Never logs headers (the Authorization header carries the API key) nor a token in a path.
import { finished } from 'node:stream';
import type { RouterContext } from '@koa/router';
import { Counter, Histogram, type Logger, type Registry } from '@notify/platform';
import type { Middleware, ParameterizedContext } from 'koa';
import type { GatewayState } from './state.ts';

/** Routes whose requests are logged at debug level: probes would otherwise drown the access log. */
const probeRoutes = new Set(['/healthz', '/readyz']);

function routeLabel(ctx: ParameterizedContext<GatewayState>): string {
  // Only named routes become labels, so unknown paths cannot blow up the metrics' cardinality.
  return (ctx as unknown as RouterContext)._matchedRouteName ?? ctx.state.route ?? 'unmatched';
}

/**
 * The path as logged. A path parameter that is a credential (the unsubscribe link's `:token`, which opens to the
 * recipient's address) is logged as the route's own pattern, never its value.
 */
function loggedPath(ctx: ParameterizedContext<GatewayState>): string {
  const pattern = (ctx as unknown as RouterContext)._matchedRoute;
  return typeof pattern === 'string' && /:\w*token\b/i.test(pattern) ? pattern : ctx.path;
}

export function observe(options: { registry: Registry; logger: Logger }): Middleware<GatewayState> {
  const requests = new Counter({
    name: 'notify_http_requests_total',
    help: 'HTTP requests answered by the gateway, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [options.registry],
  });
  // By status too, so fast refusals (401, 429) cannot hide slow accepted sends in a percentile; status codes are few.
  const duration = new Histogram({
    name: 'notify_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its response, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [options.registry],
  });
  return async (ctx, next) => {
    const started = performance.now();
    finished(ctx.res, (error) => {
      const seconds = (performance.now() - started) / 1000;
      const route = routeLabel(ctx);
      const status = ctx.res.statusCode;
      const labels = { route, method: ctx.method, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
      const line = {
        method: ctx.method,
        route,
        path: loggedPath(ctx),
        status,
        ms: Math.round(seconds * 1000),
        requestId: ctx.state.requestId,
        ...(ctx.state.keyId === undefined ? {} : { keyId: ctx.state.keyId }),
        // The client went away before the whole response was written.
        ...(error ? { aborted: true } : {}),
      };
      if (probeRoutes.has(route)) options.logger.debug(line, 'request');
      else options.logger.info(line, 'request');
    });
    await next();
  };
}
