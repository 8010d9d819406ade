// The statistics route's part of the OpenAPI document (docs/contract.md, "Statistics"), spread into document.ts: its
// path, built with the document's shared parts (parts.ts), and its schemas.
import { statsGranularities, statsMaxBuckets } from '@notify/proto';
import { maxTagLength, tagPattern } from '../send/labels.ts';

import { readRateHeaders, readResponses, ref, requestHeaders, response, type Schema } from './parts.ts';

const bound = (name: 'from' | 'to', description: string): Schema => ({
  name,
  in: 'query',
  required: true,
  description: `${description} UTC: a date (\`2026-03-01\`, its midnight) or a time ending in \`Z\` or \`+00:00\` (\`2026-03-01T14:00:00Z\`), at the start of a bucket (a whole hour; midnight by day).`,
  schema: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(Z|\\+00:00))?$' },
});

const counter = (description: string): Schema => ({ type: 'integer', minimum: 0, description });

export function statsPaths(): Record<string, Schema> {
  return {
    '/api/v1/stats': {
      get: {
        operationId: 'getStats',
        summary: "The key's project's delivery statistics by UTC hour or day (also served with a trailing slash)",
        description: `Needs \`stats:read\`. Counters kept as each message changes state, so the retention of messages never shortens
them: every bucket of the range from \`from\` (included) to \`to\` (excluded), in order, empty ones as zeros. All times are
UTC, and so are the buckets: a day is 00:00Z to 24:00Z. By hour a range spans at most ${statsMaxBuckets.hour / 24} days, by
day at most ${statsMaxBuckets.day}. With \`tag\`, only the messages sent with that tag. What each counter counts is in
docs/contract.md ("Statistics"); a late bounce lowers \`delivered\` in the bucket of the message's acceptance.
Same authentication, \`X-Organization-ID\`, languages, error shapes and read bucket as the other reads.`,
        security: [{ ApiKey: [] }],
        parameters: [
          ...requestHeaders,
          bound('from', 'The first bucket.'),
          bound('to', 'The end of the range, excluded.'),
          {
            name: 'granularity',
            in: 'query',
            required: false,
            description: 'A bucket per UTC hour or day.',
            schema: { enum: [...statsGranularities], default: 'day' },
          },
          {
            name: 'tag',
            in: 'query',
            required: false,
            description: 'Only the messages sent with this tag.',
            schema: { type: 'string', minLength: 1, maxLength: maxTagLength, pattern: tagPattern },
          },
        ],
        responses: {
          ...readResponses(),
          '200': response('The buckets of the range.', ref('schemas/Stats'), readRateHeaders),
          '422': response(
            'Query parameters refused, each with its messages: `from` or `to` missing, not a UTC bound or not at the start of a bucket; `to` not after `from` or too far; `granularity` or `tag` not one; an unknown parameter.',
            ref('schemas/FieldErrors'),
            readRateHeaders,
          ),
        },
      },
    },
  };
}

export const statsSchemas: Record<string, Schema> = {
  Stats: {
    type: 'object',
    required: ['time_zone', 'granularity', 'from', 'to', 'tag', 'buckets'],
    additionalProperties: false,
    properties: {
      time_zone: { const: 'UTC', description: 'Every time and bucket is UTC.' },
      granularity: { enum: [...statsGranularities] },
      from: { type: 'string', format: 'date-time' },
      to: { type: 'string', format: 'date-time' },
      tag: { type: ['string', 'null'], description: 'The tag asked for; null for every message of the project.' },
      buckets: { type: 'array', maxItems: Math.max(statsMaxBuckets.hour, statsMaxBuckets.day), items: { $ref: '#/components/schemas/StatsBucket' } },
    },
  },
  StatsBucket: {
    type: 'object',
    required: ['start', 'sent', 'delivered', 'deferred', 'bounced', 'complained', 'unsubscribed', 'failed'],
    additionalProperties: false,
    properties: {
      start: { type: 'string', format: 'date-time', description: "The bucket's first instant, UTC." },
      sent: counter('Messages the relay accepted.'),
      delivered: counter('Of those, the ones no bounce has come back for (so far): counted in the bucket of the acceptance.'),
      deferred: counter('Delivery attempts the relay deferred (a message retried three times counts three).'),
      bounced: {
        type: 'object',
        required: ['hard', 'soft'],
        additionalProperties: false,
        properties: {
          hard: counter('Bounces received after acceptance that suppressed the address (a permanent failure).'),
          soft: counter('Bounces received after acceptance that did not (a temporary failure reported late).'),
        },
      },
      complained: counter('Complaints (feedback-loop reports) received.'),
      unsubscribed: counter('Recipients who unsubscribed (one-click, mailto or the page), once per address added to the list.'),
      failed: counter('Messages that ended failed: refused by the relay, or given up on after the retries.'),
    },
  },
};
