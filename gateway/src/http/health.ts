// /healthz (the process answers) and /readyz (its dependencies answer) on the public port, for load balancers that
// probe the port they route to; the ops port serves the same checks through runService.
import type { Middleware } from 'koa';
import type { ReadinessCheck } from '@notify/platform';
import type { GatewayState } from './state.ts';

export type ReadinessChecks = Readonly<Record<string, ReadinessCheck>>;

export function healthz(): Middleware<GatewayState> {
  return (ctx) => {
    ctx.body = { status: 'ok' };
  };
}

/** Runs every check at once; a check that rejects counts as failing, and its error is not shown (it may name addresses). */
export function readyz(checks: ReadinessChecks): Middleware<GatewayState> {
  return async (ctx) => {
    const results: Record<string, 'ok' | 'failing'> = {};
    await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        results[name] = await check().then(
          (healthy) => (healthy ? 'ok' : 'failing'),
          () => 'failing' as const,
        );
      }),
    );
    const ready = Object.values(results).every((result) => result === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'unavailable', checks: results };
  };
}
