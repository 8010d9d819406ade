// Per-request identity and language, and the headers every response carries whatever happens next.
import { randomUUID } from 'node:crypto';
import { annotateRequestSpan } from '@notify/platform';
import type { Middleware } from 'koa';
import { negotiateLanguage } from '../i18n/negotiate.ts';
import type { GatewayState } from './state.ts';

const saneRequestId = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's X-Request-ID when it is safe to echo and log (1-128 of `[A-Za-z0-9._-]`), else a new UUID. */
export function requestIdFrom(header: string | undefined): string {
  return header !== undefined && saneRequestId.test(header) ? header : randomUUID();
}

export function requestContext(): Middleware<GatewayState> {
  return async (ctx, next) => {
    ctx.state.requestId = requestIdFrom(ctx.get('X-Request-ID') || undefined);
    ctx.state.language = negotiateLanguage(ctx.get('Accept-Language') || undefined);
    // So that a tracing backend finds a request by the id its caller knows it by.
    annotateRequestSpan({ 'notify.request.id': ctx.state.requestId });
    ctx.set({
      'X-Request-ID': ctx.state.requestId,
      'Cache-Control': 'no-store',
      'Content-Language': ctx.state.language,
    });
    // HTTPS only from now on, for a year. ctx.secure: TLS on the socket, or X-Forwarded-Proto from a proxy
    // TRUSTED_PROXY_HOPS declares. Never over plain http, where browsers ignore it and where local development lives.
    if (ctx.secure) ctx.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    await next();
  };
}
