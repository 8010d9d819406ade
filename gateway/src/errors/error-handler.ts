// The one error middleware, first in the chain: every thrown error becomes the contract's JSON in the caller's language.
// Handlers only throw; nothing else writes an error body.

import type { Logger } from '@notify/platform';
import type { Middleware, ParameterizedContext } from 'koa';
import type { GatewayState } from '../http/state.ts';
import { defaultLanguage, type Language, text, translate } from '../i18n/messages.ts';
import { ApiError, FieldErrors, type FieldMessage } from './api-error.ts';
import { isGatewayTokenRefused } from './dependency.ts';

export function handleErrors(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      respond(ctx, error, logger);
    }
  };
}

function respond(ctx: ParameterizedContext<GatewayState>, error: unknown, logger: Logger): void {
  // Set by request-context, the next middleware; the fallbacks only matter if that one ever failed.
  const language = ctx.state.language ?? defaultLanguage;
  const requestId = ctx.state.requestId ?? '';
  if (ctx.headerSent) {
    logger.error({ err: error, requestId }, 'request failed after its response started');
    return;
  }
  if (error instanceof FieldErrors) {
    ctx.status = 422;
    ctx.body = renderFields(error.fields, language);
    return;
  }
  let refusal: ApiError;
  if (error instanceof ApiError) {
    refusal = error;
    if (isGatewayTokenRefused(refusal.cause)) {
      // Not an outage that passes: every request fails until an operator fixes the configuration.
      logger.error(
        { requestId, cause: describe(refusal.cause) },
        'a dependency refused the gateway token: GATEWAY_TOKEN differs from the one it accepts, or is not allowed on the method',
      );
    } else if (refusal.status >= 500) {
      // One short line per refused request while a dependency is down: its message, not its stack.
      logger.warn({ requestId, cause: describe(refusal.cause) }, 'a dependency could not answer');
    }
  } else {
    refusal = new ApiError(500, 'internal_error', text('internal_error'), { cause: error });
    logger.error({ err: error, requestId }, 'request failed unexpectedly');
  }
  ctx.status = refusal.status;
  ctx.set(refusal.headers);
  const detail = translate(language, refusal.detail);
  if (refusal.code === undefined) ctx.body = { detail };
  else if (refusal.status >= 500) ctx.body = { detail, code: refusal.code, request_id: requestId };
  else ctx.body = { detail, code: refusal.code };
}

export function renderFields(fields: ReadonlyMap<string, readonly FieldMessage[]>, language: Language): Record<string, string[]> {
  // No prototype: a field named `__proto__` is rendered as a field like any other.
  const body = Object.create(null) as Record<string, string[]>;
  for (const [field, messages] of fields) {
    const rendered = messages.map((message) => (typeof message === 'string' ? message : translate(language, message)));
    body[field] = [...new Set(rendered)];
  }
  return body;
}

function describe(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
}
