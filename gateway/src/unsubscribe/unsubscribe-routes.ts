// One-click unsubscribe (RFC 8058) at /u/TOKEN, the link of a mail's List-Unsubscribe header. POST unsubscribes at once
// (a mailbox provider's button: no cookie, no CSRF token, a body of `List-Unsubscribe=One-Click`) and is idempotent.
// GET only shows a confirmation page whose button posts: link scanners fetch every URL of a mail, and a GET must never
// unsubscribe anyone. Answers are small HTML pages in the caller's language; dispatch-svc verifies the token.
import { status } from '@grpc/grpc-js';
import { type GrpcClient, type Logger, RemoteError } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { isDependencyDown, unavailableRetryAfterSeconds } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import type { Language } from '../i18n/messages.ts';
import { type Html, html } from '../panel/views/html.ts';
import { type UnsubscribeTextKey, unsubscribeText } from './texts.ts';
import type { UnsubscribeLimiter } from './unsubscribe-limiter.ts';

export type ReportClient = GrpcClient<dispatch.ReportServiceDefinition>;

export interface UnsubscribeDeps {
  /** dispatch-svc's ReportService (gateway token, allowed on Unsubscribe only). */
  readonly reports: ReportClient;
  readonly limiter: UnsubscribeLimiter;
  readonly logger: Logger;
}

export const unsubscribePath = '/u/:token';

/** What the mailers sign (platform/src/mail/mail-tokens.ts): anything else is not worth a call to dispatch-svc. */
const tokenPattern = /^[A-Za-z0-9_-]{1,2048}$/;
/** `List-Unsubscribe=One-Click`, or the confirmation page's form: a few dozen bytes. */
const maxBodyBytes = 8_192;

type Context = ParameterizedContext<GatewayState, { params: Record<string, string> }>;

/** Nothing loads, nothing runs, nothing frames the page; the form posts back here only; the token never leaks as a Referer. */
const headers = {
  'Content-Security-Policy': "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  'X-Robots-Tag': 'noindex, nofollow',
};

function page(ctx: Context, httpStatus: number, title: UnsubscribeTextKey, body: Html): void {
  const language: Language = ctx.state.language;
  ctx.status = httpStatus;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html`<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${unsubscribeText(language, title)}</title>
</head>
<body>
<main>
<h1>${unsubscribeText(language, title)}</h1>
${body}
</main>
</body>
</html>
`.toString();
}

function message(
  ctx: Context,
  httpStatus: number,
  key: 'done' | 'invalid' | 'unavailable' | 'badRequest' | 'error',
  params: Record<string, string | number> = {},
): void {
  page(ctx, httpStatus, `${key}.title`, html`<p>${unsubscribeText(ctx.state.language, `${key}.text`, params)}</p>`);
}

/** Reads `List-Unsubscribe=One-Click` (and the page's `from=page`) from a urlencoded or multipart body; undefined otherwise. */
async function readOneClickBody(ctx: Context): Promise<{ source: 'one_click' | 'page' } | undefined> {
  const type = ctx.get('Content-Type');
  if (!ctx.is('application/x-www-form-urlencoded', 'multipart/form-data')) return undefined;
  if (Number(ctx.get('Content-Length') || 0) > maxBodyBytes) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) return undefined;
    chunks.push(chunk);
  }
  let form: FormData;
  try {
    // The WHATWG body reader parses both encodings (multipart's boundary from the Content-Type), as a browser would.
    form = await new Response(Buffer.concat(chunks), { headers: { 'Content-Type': type } }).formData();
  } catch {
    return undefined;
  }
  if (form.get('List-Unsubscribe') !== 'One-Click') return undefined;
  return { source: form.get('from') === 'page' ? 'page' : 'one_click' };
}

/** The page for a failed call: an invalid token is a 404, a dependency down a 503 to retry; anything else is a bug. */
function failure(ctx: Context, deps: UnsubscribeDeps, error: unknown): void {
  if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT && error.reason === 'invalid_token') {
    message(ctx, 404, 'invalid');
    return;
  }
  if (isDependencyDown(error)) {
    deps.logger.warn({ requestId: ctx.state.requestId, err: error }, 'unsubscribe: dispatch-svc did not answer');
    ctx.set('Retry-After', String(unavailableRetryAfterSeconds));
    message(ctx, 503, 'unavailable');
    return;
  }
  deps.logger.error({ requestId: ctx.state.requestId, err: error }, 'unsubscribe request failed unexpectedly');
  message(ctx, 500, 'error');
}

/** The checks both methods make first; false when the request was answered already. */
async function admit(ctx: Context, deps: UnsubscribeDeps): Promise<string | undefined> {
  ctx.set(headers);
  const decision = await deps.limiter.consume(ctx.ip);
  if (!decision.allowed) {
    ctx.set('Retry-After', String(decision.retryAfterSeconds));
    page(ctx, 429, 'throttled.title', html`<p>${unsubscribeText(ctx.state.language, 'throttled.text', { seconds: decision.retryAfterSeconds })}</p>`);
    return undefined;
  }
  const token = ctx.params.token ?? '';
  if (!tokenPattern.test(token)) {
    message(ctx, 404, 'invalid');
    return undefined;
  }
  return token;
}

/** GET /u/TOKEN: the confirmation page (a dry run: it verifies the token and shows the masked address). */
export function unsubscribePage(deps: UnsubscribeDeps): Middleware<GatewayState> {
  return async (raw) => {
    const ctx = raw as Context;
    const token = await admit(ctx, deps);
    if (token === undefined) return;
    let answer: dispatch.UnsubscribeResponse__Output;
    try {
      answer = await deps.reports.call('Unsubscribe', { token, source: 'page', dryRun: true });
    } catch (error) {
      return failure(ctx, deps, error);
    }
    const { language } = ctx.state;
    const address = answer.maskedAddress;
    if (answer.suppressed) return page(ctx, 200, 'confirm.title', html`<p>${unsubscribeText(language, 'confirm.already', { address })}</p>`);
    page(
      ctx,
      200,
      'confirm.title',
      html`<p>${unsubscribeText(language, 'confirm.text', { address })}</p>
<form method="post" action="/u/${token}">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<input type="hidden" name="from" value="page">
<p><button type="submit">${unsubscribeText(language, 'confirm.button')}</button></p>
</form>`,
    );
  };
}

/** POST /u/TOKEN: RFC 8058's one click (or the confirmation page's button); the same answer however often it comes. */
export function unsubscribeOneClick(deps: UnsubscribeDeps): Middleware<GatewayState> {
  return async (raw) => {
    const ctx = raw as Context;
    const token = await admit(ctx, deps);
    if (token === undefined) return;
    const body = await readOneClickBody(ctx);
    if (!body) return message(ctx, 400, 'badRequest');
    try {
      await deps.reports.call('Unsubscribe', { token, source: body.source, dryRun: false });
    } catch (error) {
      return failure(ctx, deps, error);
    }
    message(ctx, 200, 'done');
  };
}
