// GET /api/v1/openapi.json: the public API's OpenAPI document, serialized once.
import type { Middleware } from 'koa';
import type { GatewayState } from '../http/state.ts';
import { openApiDocument } from './document.ts';

/** Where the document is served; the docs page (docs.ts) loads it from there. */
export const openApiPath = '/api/v1/openapi.json';

export function openApiRoute(): Middleware<GatewayState> {
  const body = JSON.stringify(openApiDocument);
  return (ctx) => {
    ctx.type = 'application/json';
    ctx.body = body;
  };
}
