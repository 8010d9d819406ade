// The project's delivery statistics over the public API (docs/contract.md, "Statistics"): GET /api/v1/stats/
// (stats:read) answers the counters dispatch-svc keeps as messages change state, one bucket per UTC hour or day of the
// range, empty buckets as zeros. Every bound is UTC and a bucket's start, and the range is bounded (31 days by hour,
// 366 by day), so every answer is small and read through the counters' primary key. Admitted like the other reads.
import type Router from '@koa/router';
import { checkStatsRange, type dispatch, type StatsFault, type StatsRange, statsBucketMs, statsGranularities, statsMaxBuckets } from '@notify/proto';
import type { Middleware } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import { FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import { type QueryString, queryValues } from '../messages/read-query.ts';
import type { DispatchClient } from '../send/dispatch.ts';
import { isTag, maxTagLength } from '../send/labels.ts';

export interface StatsRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
}

const queryParameters = ['from', 'to', 'granularity', 'tag'] as const;

/** The caller's words for each fault of the shared range rules. */
function faultText(fault: StatsFault, granularity: string): FieldMessage {
  switch (fault.problem) {
    case 'choice':
      return text('stats.granularity', { choices: statsGranularities.join(', ') });
    case 'format':
      return text('stats.bound');
    case 'alignment':
      return text(granularity === 'hour' ? 'stats.hour_start' : 'stats.day_start');
    case 'order':
      return text('stats.order');
    case 'span': {
      const span = granularity === 'hour' ? 'hour' : 'day';
      return text('stats.span', { days: (statsMaxBuckets[span] * statsBucketMs[span]) / statsBucketMs.day, granularity: span });
    }
  }
}

/** The query string, every parameter judged at once: `from` and `to` required, `granularity` day unless given. */
function parseQuery(query: QueryString): { range: StatsRange; tag: string } {
  const faults = new Map<string, FieldMessage[]>();
  const values = queryValues(query, queryParameters, faults);
  const granularity = values.get('granularity') ?? 'day';
  const { faults: rangeFaults, range } = checkStatsRange({ from: values.get('from') ?? '', to: values.get('to') ?? '', granularity });
  for (const fault of rangeFaults) {
    if (faults.has(fault.field)) continue;
    const missing = fault.problem === 'format' && !values.has(fault.field);
    faults.set(fault.field, [missing ? text('field.required') : faultText(fault, granularity)]);
  }
  const tag = values.get('tag') ?? '';
  if (!faults.has('tag') && tag !== '' && !isTag(tag)) faults.set('tag', [text('tags.filter', { max: maxTagLength })]);
  if (faults.size > 0 || !range) throw new FieldErrors(faults);
  return { range, tag };
}

const utc = (date: Date): string => date.toISOString().replace('.000Z', 'Z');

/** The buckets as the API answers them, from the packed lists (a number per bucket each): bounces under one key. */
function bucketsOf(stats: dispatch.ApiStats__Output, range: StatsRange): unknown[] {
  const step = statsBucketMs[range.granularity];
  return stats.sent.map((sent, index) => ({
    start: utc(new Date(range.from.getTime() + index * step)),
    sent,
    delivered: stats.delivered[index] ?? 0,
    deferred: stats.deferred[index] ?? 0,
    bounced: { hard: stats.bouncedHard[index] ?? 0, soft: stats.bouncedSoft[index] ?? 0 },
    complained: stats.complained[index] ?? 0,
    unsubscribed: stats.unsubscribed[index] ?? 0,
    failed: stats.failed[index] ?? 0,
  }));
}

function statsRoute(deps: StatsRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'stats:read');
    const { range, tag } = parseQuery(ctx.query);
    const request = {
      organizationId: access.organizationId,
      projectId: access.projectId,
      from: utc(range.from),
      to: utc(range.to),
      granularity: range.granularity,
      tag,
    };
    const stats = await deps.dispatch.call('GetApiStats', request).catch((error: unknown) => {
      throw unexpectedRemoteFailure(error);
    });
    ctx.body = {
      time_zone: 'UTC',
      granularity: range.granularity,
      from: request.from,
      to: request.to,
      tag: tag === '' ? null : tag,
      buckets: bucketsOf(stats, range),
    };
  };
}

export function registerStatsRoutes(router: Router<GatewayState>, deps: StatsRouteDeps): void {
  const read = statsRoute(deps);
  router.get('/api/v1/stats/', '/api/v1/stats/', read);
  router.get('/api/v1/stats/', '/api/v1/stats', read);
}
