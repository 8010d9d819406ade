// /healthz (the process answers) and /readyz (its dependencies answer) on the public port, for load balancers that
// probe the port they route to; the ops port serves the same checks, with the same runner, through runService.

import { checkReadiness, type ReadinessCheck } from '@notify/platform';
import type { Middleware } from 'koa';
import type { GatewayState } from './state.ts';

export type ReadinessChecks = Readonly<Record<string, ReadinessCheck>>;

export function healthz(): Middleware<GatewayState> {
  return (ctx) => {
    ctx.body = { status: 'ok' };
  };
}

/** 200 while ready (`degraded` when only a dependency the gateway can do without is down), else 503. */
export function readyz(checks: ReadinessChecks): Middleware<GatewayState> {
  return async (ctx) => {
    const readiness = await checkReadiness(checks);
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = { status: readiness.status, checks: readiness.checks };
  };
}
