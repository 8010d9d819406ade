// Last in the chain: what the router did not answer is 405 (known path, other method, with Allow) or 404.
import type { RouterContext } from '@koa/router';
import type { Middleware } from 'koa';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import type { GatewayState } from './state.ts';

export function unmatched(): Middleware<GatewayState> {
  return (ctx) => {
    const layers = (ctx as unknown as RouterContext).matched ?? [];
    const allowed = [...new Set(layers.flatMap((layer) => layer.methods))];
    if (allowed.length > 0) {
      ctx.state.route = layers.find((layer) => layer.name)?.name;
      throw new ApiError(405, 'method_not_allowed', text('method_not_allowed', { method: ctx.method }), {
        headers: { Allow: allowed.join(', ') },
      });
    }
    throw new ApiError(404, 'not_found', text('not_found'));
  };
}
