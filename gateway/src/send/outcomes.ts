// notify_send_outcomes_total: what became of each send request, read from the response that actually left.
import { finished } from 'node:stream';
import { Counter, type Registry } from '@notify/platform';
import type { Middleware } from 'koa';
import type { GatewayState } from '../http/state.ts';

export type SendOutcome = 'accepted' | 'replayed' | 'throttled' | 'refused';

/** 5xx answers are not outcomes of the request but failures of the gateway; notify_http_requests_total counts them. */
export function sendOutcome(status: number, replayed: boolean): SendOutcome | undefined {
  if (status === 202) return replayed ? 'replayed' : 'accepted';
  if (status === 429) return 'throttled';
  if (status >= 400 && status < 500) return 'refused';
  return undefined;
}

/** The counter, each outcome at 0 from the start; shared by the send and the batch route. */
export function sendOutcomesCounter(registry: Registry): Counter<'outcome'> {
  const outcomes = new Counter({
    name: 'notify_send_outcomes_total',
    help: 'Send requests by outcome: accepted, replayed (idempotent replay), throttled (429) or refused (other 4xx)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of ['accepted', 'replayed', 'throttled', 'refused'] as const) outcomes.inc({ outcome }, 0);
  return outcomes;
}

/** Counts the request's outcome once its response left; a batch's 200 is counted item by item by its route instead. */
export function countSendOutcomes(outcomes: Counter<'outcome'>): Middleware<GatewayState> {
  return async (ctx, next) => {
    finished(ctx.res, () => {
      const outcome = sendOutcome(ctx.res.statusCode, ctx.response.get('Idempotent-Replayed') === 'true');
      if (outcome) outcomes.inc({ outcome });
    });
    await next();
  };
}
