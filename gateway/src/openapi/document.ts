// The OpenAPI 3.1 document of the public API, served at GET /api/v1/openapi.json. Written from docs/contract.md and the
// gateway's own limits, so the rules it states are the ones the gateway applies; tests check live responses against it.
import { maxKeyFromDomains, maxSuppressionsAdded, scopePresets, scopes, suppressionReasons } from '@notify/proto';
import { maxDomainLength } from '../domains/routes.ts';
import { listLimits, messageStatuses, rfc3339Pattern } from '../messages/read-query.ts';
import { maxBatchItems } from '../send/batch-body.ts';
import { maxMetadataKeyLength, maxMetadataKeys, maxMetadataValueLength, maxTagLength, maxTags, tagPattern, tagSchema, tagsSchema } from '../send/labels.ts';
import {
  maxDataArrayItems,
  maxDataDepth,
  maxDataElements,
  maxFromLength,
  maxRecipientLength,
  maxSendAheadDays,
  maxTemplateLength,
} from '../send/validation.ts';
import { domainPaths, domainSchemas } from './domains-paths.ts';
import {
  errorBody,
  json,
  managedWriteResponses,
  pageParameters,
  rateHeaders,
  readRateHeaders,
  readResponses,
  ref,
  requestHeaders,
  response,
  type Schema,
  serverErrorBody,
} from './parts.ts';
import { statsPaths, statsSchemas } from './stats-paths.ts';
import { templateOpenApi } from './templates-paths.ts';
import { webhookPaths, webhookSchemas } from './webhooks-paths.ts';

const readDescription = `Same authentication, \`X-Organization-ID\`, languages and error shapes as the send endpoint. A key sees only its own
project's messages: any other id, another project's or another organization's included, is 404 message_not_found (never 403).
Reads count against their own per-key bucket (\`NOTIFY_PUBLIC_READ_RATE\`, 600 a minute by default, policy \`"read"\`), never
against sends.`;

const apiKeysDescription = `Needs the scope \`keys:manage\`. Same authentication, \`X-Organization-ID\`, languages and error shapes as the
send endpoint; counted against the read bucket. A key manages only its own project's keys: another project's key is 404
api_key_not_found, exactly like a missing one.`;

const suppressionsDescription = `The addresses the key's project never mails: listed by a hard bounce, a complaint, an unsubscribe or by hand.
Same authentication, \`X-Organization-ID\`, languages and error shapes as the send endpoint; counted against the read
bucket.`;

const apiKeyProperties: Record<string, Schema> = {
  id: { type: 'integer', minimum: 1 },
  name: { type: 'string' },
  prefix: { type: 'string', description: 'The public part of the key, safe to show and log.' },
  scopes: { type: 'array', items: ref('schemas/Scope') },
  test: { type: 'boolean' },
  send_rate: { type: ['string', 'null'], description: "The key's own send rate (`<count>/<unit>`), null for the deployment's." },
  from_domains: {
    type: 'array',
    items: { type: 'string' },
    description: "The organization's sending domains the key may send From, lower case and sorted; empty: no limit.",
  },
  created_at: { type: 'string', format: 'date-time' },
  revoked_at: { type: ['string', 'null'], format: 'date-time' },
  last_used_at: { type: ['string', 'null'], format: 'date-time', description: 'To the minute.' },
};

/** A key route's 403s: those of every read, and a limited caller's sending domains. */
const fromDomainRefusals = response(
  'The key may not act on this organization (permission_denied), lacks a scope (insufficient_scope; the detail names it), or is limited to some sending domains and the key to issue or revoke is not limited to some of them (from_domain_not_allowed).',
  errorBody(['permission_denied', 'insufficient_scope', 'from_domain_not_allowed']),
  readRateHeaders,
);

const messageProperties: Record<string, Schema> = {
  message_id: { type: 'integer', minimum: 1 },
  status: ref('schemas/MessageStatus'),
  to: { type: 'string' },
  template: { type: 'string', description: 'The template slug it was accepted with.' },
  template_version: { type: 'integer', minimum: 1 },
  celery_task_id: { type: 'string', format: 'uuid', description: 'Id of the background job that processes the message.' },
  attempts: { type: 'integer', minimum: 0, description: 'Delivery attempts made so far.' },
  created_at: { type: 'string', format: 'date-time', description: 'Acceptance time (RFC 3339, UTC).' },
  updated_at: { type: 'string', format: 'date-time', description: 'Time of the last transition (RFC 3339, UTC).' },
  last_smtp_reply: { type: ['string', 'null'], description: "The relay's last reply, code first; null before any." },
  failure_reason: { type: ['string', 'null'], description: 'Why the message failed; null unless it did.' },
  trace_id: {
    type: ['string', 'null'],
    pattern: '^[0-9a-f]{32}$',
    description: 'W3C trace id of the request that accepted the message, to find its whole life in a tracing backend; null when none was recorded.',
  },
  tags: { ...tagsSchema, description: 'The tags the send gave, in its order; `[]` when it gave none.' },
  metadata: { type: 'object', additionalProperties: { type: 'string' }, description: 'The metadata the send gave; `{}` when it gave none.' },
  test: {
    type: 'boolean',
    description:
      'Sent with a test key (`nk_test_`): it went through every check and the whole lifecycle, but was never handed to SMTP (it ends `sent` with the reply `250 test mode: not delivered`) and never counted against the monthly quota.',
  },
  send_at: {
    type: ['string', 'null'],
    format: 'date-time',
    description: 'When the send was scheduled for (`send_at` of the send, RFC 3339, UTC); null for a message sent at once.',
  },
};

const cancelDescription = `Cancels a scheduled message (a send with \`send_at\` that is not due yet): it ends \`canceled\`, the transition is
recorded, and it is never sent. Once the message is \`queued\` or further on (its time came), or already canceled, the answer is
409 not_cancelable. A cancel gives no quota back: the message was accepted. Same authentication, \`X-Organization-ID\`,
languages and error shapes as the reads; another project's or organization's id is 404 message_not_found. Counts against
the read bucket (\`NOTIFY_PUBLIC_READ_RATE\`, policy \`"read"\`), never against sends.`;

/** The refusals a send and a batch share, for the request as a whole. */
function sendRefusals(): Record<string, Schema> {
  return {
    '400': response(
      'Malformed body (parse_error) or header (invalid_header: X-Organization-ID or Idempotency-Key).',
      errorBody(['parse_error', 'invalid_header']),
      rateHeaders,
    ),
    '401': response('Missing `Authorization`, another scheme, or an unknown or revoked key.', ref('schemas/Detail'), {
      'WWW-Authenticate': ref('headers/WWW-Authenticate'),
    }),
    '403': response(
      "The key may not act on this organization (permission_denied), lacks the scope `send` (insufficient_scope), the organization's plan blocks more sends (plan_blocked), or the key is limited to some sending domains and `from` is not on one of them (from_domain_not_allowed; the detail names the domains it may use).",
      errorBody(['permission_denied', 'insufficient_scope', 'plan_blocked', 'from_domain_not_allowed']),
    ),
    '409': response('A request with this Idempotency-Key is still being processed; retry after Retry-After.', errorBody(['idempotency_key_in_use']), {
      ...rateHeaders,
      'Retry-After': ref('headers/Retry-After'),
    }),
    '415': response('The body is not declared as uncompressed JSON.', errorBody(['unsupported_media_type']), rateHeaders),
    '500': response('An internal error; retry later, quoting request_id.', serverErrorBody(['internal_error'])),
    '503': response('A dependency is down; retry after Retry-After.', serverErrorBody(['service_unavailable']), { 'Retry-After': ref('headers/Retry-After') }),
  };
}

const sendDescription = `Queues one email built from a stored template. The response confirms queuing only, not delivery.

Checks run in this order; the first failure answers:
1. body size (413)
2. \`Authorization: Api-Key <key>\` (401)
3. \`X-Organization-ID\` (400)
4. the key's project in that organization (403 permission_denied)
5. the plan allows more sends: not suspended, monthly quota not used up (403 plan_blocked)
6. per-key rate (429)
7. \`Content-Type: application/json\` (415)
8. a JSON object in UTF-8 (400 parse_error)
9. \`Idempotency-Key\` is a UUID (400 invalid_header)
10. idempotency record: replay (202), in flight (409), another body (422)
11. fields, all at once (422)
11. the From: a key limited to some sending domains names a \`from\` on one of them (403 from_domain_not_allowed), on a verified sending domain of the organization (422 on \`from\`)
12. template slug exists in the key's project (404)
13. template active and \`data\` matching its variables (422)
14. accepted (202)

Every request that passes checks 2-5 counts against the rate limit, whatever happens after.

API keys refused with 401 are limited per client address: past the limit (20 a minute by default) a key presented
from that address is answered 429 \`{detail}\` with \`Retry-After\`, without being judged, until the window ends; a key
the gateway has seen accepted recently still passes. A request without an \`Api-Key\` credential is 401, never counted.

Idempotency: a request repeated with the same \`Idempotency-Key\` (scope: the key's project) and the same JSON (key order and spacing do not matter)
within the idempotency window (24 hours by default) answers the first 202 again with \`idempotent_replay: true\` and \`Idempotent-Replayed: true\`,
creating nothing. Only accepted requests are stored: a refused one can be corrected and retried under the same key.`;

const sendBatchDescription = `Queues up to ${maxBatchItems} emails in one request, each item a send body judged exactly as \`POST /api/v1/send/\` judges one.

The request as a whole is refused only for what concerns all of its items, in this order: body size (413, its own limit
NOTIFY_MAX_BATCH_BODY_BYTES, 5 MiB by default), \`Authorization\` (401), \`X-Organization-ID\` (400), the key's organization
(403 permission_denied), the plan (403 plan_blocked: suspended, or the monthly quota already used up), the per-key rate
(429 when not even one send is left), \`Content-Type\` (415), a JSON object (400 parse_error), \`messages\` missing, not a
list, empty or longer than ${maxBatchItems} (422, with any unknown top-level field), \`Idempotency-Key\` a UUID (400), and the
key's record (409 in flight, 422 used with another body: batches and single sends share keys).

Otherwise the answer is 200 with one entry per item, in order: 202 with what a send's 202 carries (its \`status\` named
\`message_status\`), or the item's refusal: 422 (its fields, an inactive template, \`data\` against the template's
variables, a suppressed \`to\`), 404 template_not_found, 413 payload_too_large (the message, its data with its
template, is too large to be queued), 403 from_domain_not_allowed (the key may not send From the item's \`from\`), 403 plan_blocked (the monthly quota covered only the items before it) or 429 throttled (the per-key rate covered only the items before it; \`retry_after\` seconds).

Rate: the request takes one point of the per-key send rate like a send; each further item whose fields are valid takes
one more, the first items first, as far as the window goes; points of items not accepted in the end are given back.
A batch costs one point per accepted item, and at least one. Quota: each accepted item counts once, the first first.
Accepted items are committed in one transaction. An \`Idempotency-Key\` replays the whole answer (accepted entries with
\`idempotent_replay: true\`, header \`Idempotent-Replayed: true\`), writing nothing.`;

const templates = templateOpenApi();

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Notify',
    version: '1.0.0',
    summary: 'Template-based email notifications over one HTTP endpoint.',
    license: { name: 'Apache License 2.0', identifier: 'Apache-2.0' },
    description:
      'Texts (`detail` and field messages) are in English or Spanish, chosen by `Accept-Language`; clients must not parse them. Codes and field names never change with the language.',
  },
  servers: [{ url: '/', description: 'The gateway serving this document (its own origin).' }],
  security: [{ ApiKey: [] }],
  paths: {
    '/api/v1/send/': {
      post: {
        operationId: 'send',
        summary: 'Queue a notification message (also served without the trailing slash)',
        description: sendDescription,
        security: [{ ApiKey: [] }],
        parameters: [
          ...requestHeaders.slice(0, 1),
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description: 'A UUID chosen by the caller (any version, any case), to retry safely.',
            schema: { type: 'string', format: 'uuid' },
          },
          ...requestHeaders.slice(1),
        ],
        requestBody: {
          required: true,
          description: 'A JSON object in UTF-8 (`Content-Type: application/json`, charset utf-8 allowed), at most NOTIFY_MAX_BODY_BYTES (256 KiB by default).',
          content: json(ref('schemas/SendRequest')),
        },
        responses: {
          '202': response(
            'Accepted and queued (scheduled, with `send_at`), or the replay of an earlier identical request.',
            { oneOf: [ref('schemas/Accepted'), ref('schemas/ScheduledAccepted')] },
            {
              ...rateHeaders,
              'Idempotent-Replayed': ref('headers/Idempotent-Replayed'),
            },
          ),
          ...sendRefusals(),
          '404': response("No template with this slug in the key's project.", errorBody(['template_not_found']), rateHeaders),
          '413': response(
            'The body is larger than the limit, or the message (its data with its template) too large to be queued.',
            errorBody(['payload_too_large']),
          ),
          '422': response(
            'Fields refused, each with its messages: request fields, `template` (inactive), `data` (template variables) or `Idempotency-Key` (used with another body).',
            ref('schemas/FieldErrors'),
            rateHeaders,
          ),
          '429': response(
            'Over the per-key rate (with the rate-limit headers), or too many API keys refused for this client address (without them); the text names the same seconds as Retry-After.',
            ref('schemas/Detail'),
            { ...rateHeaders, 'Retry-After': ref('headers/Retry-After') },
          ),
        },
      },
    },
    // Documented without the trailing slash, like the reads (both forms are served).
    '/api/v1/send/batch': {
      post: {
        operationId: 'sendBatch',
        summary: 'Queue up to 500 notification messages, each judged on its own (also served with a trailing slash)',
        description: sendBatchDescription,
        security: [{ ApiKey: [] }],
        parameters: [
          ...requestHeaders.slice(0, 1),
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description: 'A UUID chosen by the caller, to retry the whole batch safely.',
            schema: { type: 'string', format: 'uuid' },
          },
          ...requestHeaders.slice(1),
        ],
        requestBody: {
          required: true,
          description: 'A JSON object in UTF-8, at most NOTIFY_MAX_BATCH_BODY_BYTES (5 MiB by default).',
          content: json(ref('schemas/SendBatchRequest')),
        },
        responses: {
          '200': response('One entry per item, in order, or the replay of an earlier identical batch.', ref('schemas/BatchResults'), {
            ...rateHeaders,
            'Idempotent-Replayed': ref('headers/Idempotent-Replayed'),
          }),
          ...sendRefusals(),
          '413': response('The body is larger than the batch limit.', errorBody(['payload_too_large'])),
          '422': response(
            '`messages` missing, not a list, empty or too long, an unknown top-level field, or `Idempotency-Key` used with another body.',
            ref('schemas/FieldErrors'),
            rateHeaders,
          ),
          '429': response(
            'No send left in the per-key rate (with the rate-limit headers), or too many API keys refused for this client address (without them).',
            ref('schemas/Detail'),
            {
              ...rateHeaders,
              'Retry-After': ref('headers/Retry-After'),
            },
          ),
        },
      },
    },
    // The reads are documented without the trailing slash (both forms are served) so that linters and generated
    // clients take them as written; only the seed's send path keeps its slash.
    '/api/v1/messages': {
      get: {
        operationId: 'listMessages',
        summary: "List the key's project's messages, newest first (also served with a trailing slash)",
        description: `${readDescription}

Keyset pagination: pass \`next\` back as \`cursor\` for the following page. Pages neither skip nor repeat a message
while new ones are accepted; new messages appear on a fresh first page. A filter that does not parse is 422, every parameter at once.`,
        security: [{ ApiKey: [] }],
        parameters: [
          ...requestHeaders,
          { name: 'status', in: 'query', required: false, description: 'Only messages in this lifecycle state.', schema: ref('schemas/MessageStatus') },
          {
            name: 'to',
            in: 'query',
            required: false,
            description: 'Only messages to this address (compared case-insensitively).',
            schema: { type: 'string', maxLength: maxRecipientLength },
          },
          {
            name: 'template',
            in: 'query',
            required: false,
            description: 'Only messages of this template slug.',
            schema: { type: 'string', maxLength: maxTemplateLength, pattern: '^[A-Za-z0-9_-]*$' },
          },
          {
            name: 'created_after',
            in: 'query',
            required: false,
            description: 'Accepted at or after this time (RFC 3339).',
            schema: { type: 'string', format: 'date-time', pattern: rfc3339Pattern },
          },
          {
            name: 'created_before',
            in: 'query',
            required: false,
            description: 'Accepted before this time (RFC 3339).',
            schema: { type: 'string', format: 'date-time', pattern: rfc3339Pattern },
          },
          ...pageParameters('Messages', 200),
          { name: 'tag', in: 'query', required: false, description: 'Only messages sent with this tag (exact match, case-sensitive).', schema: tagSchema },
        ],
        responses: {
          '200': response('A page of messages, without their events.', ref('schemas/MessagePage'), readRateHeaders),
          '422': response(
            'Query parameters refused, each with its messages (an unknown parameter is refused too).',
            ref('schemas/FieldErrors'),
            readRateHeaders,
          ),
          ...readResponses(),
        },
      },
    },
    '/api/v1/messages/{message_id}': {
      get: {
        operationId: 'getMessage',
        summary: 'Read one message and its transitions (also served with a trailing slash)',
        description: readDescription,
        security: [{ ApiKey: [] }],
        parameters: [
          { name: 'message_id', in: 'path', required: true, description: 'The `message_id` the send answered.', schema: { type: 'integer', minimum: 1 } },
          ...requestHeaders,
        ],
        responses: {
          '200': response('The message with its transitions, oldest first.', ref('schemas/Message'), readRateHeaders),
          '404': response("No message with this id in the key's project and organization.", errorBody(['message_not_found']), readRateHeaders),
          ...readResponses(),
        },
      },
      delete: {
        operationId: 'cancelMessage',
        summary: 'Cancel a scheduled message (also served with a trailing slash)',
        description: cancelDescription,
        security: [{ ApiKey: [] }],
        parameters: [
          {
            name: 'message_id',
            in: 'path',
            required: true,
            description: 'The `message_id` the scheduled send answered.',
            schema: { type: 'integer', minimum: 1 },
          },
          ...requestHeaders,
        ],
        responses: {
          '200': response('Canceled: the message, now `canceled`, with its transitions, oldest first.', ref('schemas/Message'), readRateHeaders),
          '404': response("No message with this id in the key's project and organization.", errorBody(['message_not_found']), readRateHeaders),
          '409': response('The message is not scheduled any more: queued or further on, or already canceled.', errorBody(['not_cancelable']), readRateHeaders),
          ...readResponses(),
        },
      },
    },
    '/api/v1/api-keys': {
      get: {
        operationId: 'listApiKeys',
        summary: "List the key's project's API keys, revoked ones included (also served with a trailing slash)",
        description: apiKeysDescription,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        responses: {
          '200': response('Every key of the project, oldest first; never a secret.', ref('schemas/ApiKeyList'), readRateHeaders),
          ...readResponses(),
        },
      },
      post: {
        operationId: 'createApiKey',
        summary: "Issue an API key whose scopes are all among the caller's (also served with a trailing slash)",
        description: `${apiKeysDescription}

The answer is the only one that ever carries the key itself (\`key\`): store it at once. A test key issues only test keys.
A caller limited to some sending domains (\`from_domains\`) issues only keys limited to some of its own, its own list when
the request names none: else 403 from_domain_not_allowed naming the domain.`,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        requestBody: { required: true, content: json(ref('schemas/ApiKeyRequest')) },
        responses: {
          ...managedWriteResponses(),
          '201': response('The key, with its secret, shown once.', ref('schemas/CreatedApiKey'), readRateHeaders),
          '403': fromDomainRefusals,
          '422': response(
            'Fields refused, each with its messages: a missing or blank name, an unknown scope, a `from_domains` entry that is not a sending domain of the organization, an unknown field.',
            ref('schemas/FieldErrors'),
            readRateHeaders,
          ),
        },
      },
    },
    '/api/v1/api-keys/{id}': {
      delete: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key of the project (also served with a trailing slash)',
        description: `${apiKeysDescription}

Revoking a key whose scopes are not all among the caller's is 403 insufficient_scope. A caller limited to some sending
domains revokes only keys limited to some of its own: else 403 from_domain_not_allowed. Revoking twice answers the same
record. Every gateway refuses the key within about a second; a key may revoke itself.`,
        security: [{ ApiKey: [] }],
        parameters: [{ name: 'id', in: 'path', required: true, description: "The key's `id`.", schema: { type: 'integer', minimum: 1 } }, ...requestHeaders],
        responses: {
          '200': response('The key, now revoked.', ref('schemas/ApiKey'), readRateHeaders),
          '404': response("No key with this id in the key's project.", errorBody(['api_key_not_found']), readRateHeaders),
          ...readResponses(),
          '403': fromDomainRefusals,
        },
      },
    },
    '/api/v1/suppressions': {
      get: {
        operationId: 'listSuppressions',
        summary: "List the key's project's suppressed addresses, newest first (also served with a trailing slash)",
        description: `${suppressionsDescription}

Needs \`suppressions:read\`. Keyset pagination as the messages listing: pass \`next\` back as \`cursor\`.`,
        security: [{ ApiKey: [] }],
        parameters: [
          ...requestHeaders,
          { name: 'reason', in: 'query', required: false, description: 'Only entries with this reason.', schema: ref('schemas/SuppressionReason') },
          {
            name: 'address',
            in: 'query',
            required: false,
            description: 'Only this address (its domain in any case).',
            schema: { type: 'string', maxLength: maxRecipientLength },
          },
          ...pageParameters('Entries', 400),
        ],
        responses: {
          ...readResponses(),
          '200': response('A page of entries.', ref('schemas/SuppressionPage'), readRateHeaders),
          '422': response('Query parameters refused, each with its messages.', ref('schemas/FieldErrors'), readRateHeaders),
        },
      },
      post: {
        operationId: 'addSuppressions',
        summary: 'Suppress up to 1,000 addresses (also served with a trailing slash)',
        description: `${suppressionsDescription}

Needs \`suppressions:write\`. Each address is added as \`manual\`, all in one transaction; an address already listed keeps
its entry (\`added: false\`). Sends to a listed address are refused (422 on \`to\`).`,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        requestBody: { required: true, content: json(ref('schemas/SuppressionsRequest')) },
        responses: {
          ...managedWriteResponses(),
          '200': response('Each address with its entry, in order.', ref('schemas/AddedSuppressions'), readRateHeaders),
          '422': response(
            'Fields refused: `addresses` missing, not a list of 1 to 1,000, or `addresses[i]` not one address; an unknown field.',
            ref('schemas/FieldErrors'),
            readRateHeaders,
          ),
        },
      },
    },
    '/api/v1/suppressions/{address}': {
      delete: {
        operationId: 'removeSuppression',
        summary: 'Mail an address again: remove its entry (also served with a trailing slash)',
        description: `${suppressionsDescription}

Needs \`suppressions:write\`, and \`suppressions:reactivate\` too for an entry made by a hard bounce or a complaint (else 403
insufficient_scope naming it): mailing such an address again risks the sender's reputation.`,
        security: [{ ApiKey: [] }],
        parameters: [
          {
            name: 'address',
            in: 'path',
            required: true,
            description: 'The address, URL-encoded, or an erased entry as listed (`hmac-sha256:<hex>`).',
            schema: { type: 'string', maxLength: maxRecipientLength },
          },
          ...requestHeaders,
        ],
        responses: {
          ...readResponses(),
          '200': response('The entry removed.', ref('schemas/Suppression'), readRateHeaders),
          '404': response("The address is not on the key's project's list.", errorBody(['suppression_not_found']), readRateHeaders),
        },
      },
    },
    ...domainPaths(),
    ...webhookPaths(),
    ...templates.paths,
    ...statsPaths(),
  },
  components: {
    securitySchemes: {
      ApiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description:
          'The header reads `Api-Key <key>`: the scheme `Api-Key`, spelled exactly so, then the key. Keys go only in this header, never in the body. A test key (`nk_test_...` rather than `nk_...`) runs every check and creates real messages, which are never mailed (they end `sent` with the reply `250 test mode: not delivered`, marked `test`) and never counted against the monthly quota.',
      },
    },
    schemas: {
      SendRequest: {
        type: 'object',
        required: ['template', 'to', 'channel', 'data'],
        additionalProperties: false,
        properties: {
          template: {
            type: 'string',
            minLength: 1,
            maxLength: maxTemplateLength,
            pattern: '^[A-Za-z0-9_-]+$',
            description: "Slug of an active template of the key's project.",
          },
          to: {
            type: 'string',
            format: 'email',
            maxLength: maxRecipientLength,
            description: 'One address (addr-spec): no display name, no list, no control characters.',
          },
          channel: { type: 'string', const: 'email' },
          data: {
            type: 'object',
            additionalProperties: true,
            description: `The template variables: a JSON object, at most ${maxDataDepth} levels deep, without the keys \`__proto__\`, \`constructor\` or \`prototype\`, with no array longer than ${maxDataArrayItems} items and at most ${maxDataElements} values in all (each member of an object and each item of an array counts one, at every depth).`,
          },
          tags: {
            ...tagsSchema,
            description: `Optional. Your own labels, to find the message by (\`GET /api/v1/messages?tag=\`) and to route its webhook events: at most ${maxTags} distinct tags of 1-${maxTagLength} letters, digits, \`_\` and \`-\`; a repeated tag is refused (422), not merged. Returned by the status API and in every webhook event of the message (\`data.tags\`).`,
          },
          metadata: {
            type: 'object',
            maxProperties: maxMetadataKeys,
            propertyNames: { minLength: 1, maxLength: maxMetadataKeyLength, pattern: tagPattern },
            additionalProperties: { type: 'string', maxLength: maxMetadataValueLength },
            description: `Optional. Your own data carried with the message, unchanged: a flat object of at most ${maxMetadataKeys} keys (1-${maxMetadataKeyLength} letters, digits, \`_\` and \`-\`; not \`__proto__\`, \`constructor\` or \`prototype\`), each with a string of at most ${maxMetadataValueLength} characters and no control characters. Returned by the status API and in every webhook event of the message (\`data.metadata\`).`,
          },
          send_at: {
            type: 'string',
            format: 'date-time',
            description: `Send later: an RFC 3339 time with its offset (\`Z\` or \`+01:00\`), later than now and at most ${maxSendAheadDays} days ahead (else 422 on \`send_at\`). The message is accepted \`scheduled\` (the 202 says so and echoes \`send_at\` in UTC), no job exists until its time, and it is queued within about a second of it. It can be canceled until then (DELETE /api/v1/messages/{message_id}). It counts against the quota when accepted, like any send. Omitted: sent at once, and the 202 is exactly the four fields.`,
          },
          from: {
            type: 'string',
            maxLength: maxFromLength,
            examples: ['Acme Billing <billing@acme.example>'],
            description:
              "Optional. Who the mail is From: `address@domain`, or a display name and an address as `Name <address@domain>` (the name may be quoted; at most 200 characters). The domain must be a verified sending domain of the organization (see /api/v1/domains/; else 422 on `from`), and the mail is DKIM-signed with its key. Omitted: the deployment's own From address. A key limited to some domains (`from_domains`) must name a `from` on one of them (else 403 from_domain_not_allowed).",
          },
        },
      },
      Accepted: {
        type: 'object',
        required: ['message_id', 'status', 'celery_task_id', 'idempotent_replay'],
        additionalProperties: false,
        properties: {
          message_id: { type: 'integer', minimum: 1 },
          status: { type: 'string', const: 'queued' },
          celery_task_id: { type: 'string', format: 'uuid', description: 'Id of the background job that processes the message.' },
          idempotent_replay: { type: 'boolean', description: '`true` when this answers an earlier identical request again.' },
        },
      },
      ScheduledAccepted: {
        type: 'object',
        required: ['message_id', 'status', 'celery_task_id', 'idempotent_replay', 'send_at'],
        additionalProperties: false,
        properties: {
          message_id: { type: 'integer', minimum: 1 },
          status: { type: 'string', const: 'scheduled' },
          celery_task_id: { type: 'string', format: 'uuid', description: 'Id of the background job that will process the message once it is due.' },
          idempotent_replay: { type: 'boolean', description: '`true` when this answers an earlier identical request again.' },
          send_at: { type: 'string', format: 'date-time', description: 'The requested time, in UTC.' },
        },
      },
      SendBatchRequest: {
        type: 'object',
        required: ['messages'],
        additionalProperties: false,
        properties: {
          messages: {
            type: 'array',
            minItems: 1,
            maxItems: maxBatchItems,
            items: ref('schemas/SendRequest'),
            description: 'Each a send body; each is judged on its own.',
          },
        },
      },
      BatchResults: {
        type: 'object',
        required: ['results'],
        additionalProperties: false,
        properties: {
          results: {
            type: 'array',
            minItems: 1,
            maxItems: maxBatchItems,
            items: { oneOf: [ref('schemas/BatchAccepted'), ref('schemas/BatchRefused')] },
            description: 'One entry per item, in order.',
          },
        },
      },
      BatchAccepted: {
        type: 'object',
        required: ['index', 'status', 'message_id', 'message_status', 'celery_task_id', 'idempotent_replay'],
        additionalProperties: false,
        properties: {
          index: { type: 'integer', minimum: 0, description: 'Position of the item in `messages`.' },
          status: { const: 202 },
          message_id: { type: 'integer', minimum: 1 },
          message_status: { type: 'string', enum: ['queued', 'scheduled'], description: "The send's 202 `status`: `scheduled` for an item with `send_at`." },
          celery_task_id: { type: 'string', format: 'uuid', description: 'Id of the background job that processes the message.' },
          idempotent_replay: { type: 'boolean', description: '`true` when this answers an earlier identical batch again.' },
          send_at: { type: 'string', format: 'date-time', description: 'An item with `send_at` only: the requested time, in UTC.' },
        },
      },
      BatchRefused: {
        type: 'object',
        required: ['index', 'status', 'errors'],
        additionalProperties: false,
        properties: {
          index: { type: 'integer', minimum: 0, description: 'Position of the item in `messages`.' },
          status: { enum: [403, 404, 413, 422, 429] },
          code: { enum: ['plan_blocked', 'from_domain_not_allowed', 'template_not_found', 'payload_too_large', 'throttled'], description: 'Absent for 422.' },
          errors: {
            type: 'object',
            minProperties: 1,
            description:
              "The item's refused fields with their messages (422), `template` (404), or `non_field_errors` for what concerns the item as a whole (not an object, 403, 413, 429).",
            additionalProperties: { type: 'array', minItems: 1, items: { type: 'string' } },
          },
          retry_after: { type: 'integer', minimum: 1, description: '429 only: whole seconds until the per-key rate has room again.' },
        },
      },
      MessageStatus: {
        enum: [...messageStatuses],
        description:
          'queued -> sending -> sent; sending -> deferred (retried later) -> sending; sending -> failed; sent -> bounced (an asynchronous bounce report) or complained (a feedback-loop complaint). A send with `send_at` starts scheduled: scheduled -> queued when it is due, or scheduled -> canceled on request. States never move backwards.',
      },
      MessageEvent: {
        type: 'object',
        required: ['status', 'attempt', 'at', 'smtp_reply', 'reason'],
        additionalProperties: false,
        properties: {
          status: ref('schemas/MessageStatus'),
          attempt: { type: 'integer', minimum: 0, description: '0 for the acceptance, then the delivery attempt it belongs to.' },
          at: { type: 'string', format: 'date-time' },
          smtp_reply: { type: ['string', 'null'], description: "The relay's reply, code first, for SMTP outcomes; else null." },
          reason: { type: ['string', 'null'] },
        },
      },
      MessageSummary: {
        type: 'object',
        required: Object.keys(messageProperties),
        additionalProperties: false,
        properties: messageProperties,
      },
      Message: {
        type: 'object',
        required: [...Object.keys(messageProperties), 'events'],
        additionalProperties: false,
        properties: { ...messageProperties, events: { type: 'array', items: ref('schemas/MessageEvent'), description: 'Oldest first.' } },
      },
      MessagePage: {
        type: 'object',
        required: ['results', 'next'],
        additionalProperties: false,
        properties: {
          results: { type: 'array', maxItems: listLimits.max, items: ref('schemas/MessageSummary') },
          next: { type: ['string', 'null'], description: 'The cursor of the next page; null on the last page.' },
        },
      },
      Scope: {
        enum: [...scopes],
        description:
          'What a key may do: send (POST /api/v1/send/ and /batch/, cancel a scheduled message), messages:read (read messages), keys:manage (these key routes); the others name the management API as it grows.',
      },
      ApiKeyRequest: {
        type: 'object',
        required: ['name'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 200, description: 'Who uses the key.' },
          scopes: {
            type: 'array',
            items: { enum: [...scopes, ...Object.keys(scopePresets)] },
            description:
              "Scopes, or the presets `sending` (send, messages:read) and `full` (every scope). Omitted or empty: `sending`. Each must be among the caller's.",
          },
          test: { type: 'boolean', description: 'Issue a test key (`nk_test_...`): it never mails. Omitted: false.' },
          from_domains: {
            type: 'array',
            maxItems: maxKeyFromDomains,
            items: { type: 'string', minLength: 1, maxLength: maxDomainLength },
            description:
              "Limit the key to sending From these sending domains of the organization (any verification status); lower-cased, a trailing dot dropped, each kept once. Omitted or empty: the caller's own limit (none for an unlimited caller). A limited caller may name only domains among its own.",
          },
        },
      },
      ApiKey: {
        type: 'object',
        required: Object.keys(apiKeyProperties),
        additionalProperties: false,
        properties: apiKeyProperties,
      },
      CreatedApiKey: {
        type: 'object',
        required: [...Object.keys(apiKeyProperties), 'key'],
        additionalProperties: false,
        properties: { ...apiKeyProperties, key: { type: 'string', description: 'The key itself, `prefix.secret`: shown only here.' } },
      },
      ApiKeyList: {
        type: 'object',
        required: ['results'],
        additionalProperties: false,
        properties: { results: { type: 'array', items: ref('schemas/ApiKey') } },
      },
      SuppressionReason: { enum: [...suppressionReasons] },
      Suppression: {
        type: 'object',
        required: ['address', 'reason', 'message_id', 'created_at'],
        additionalProperties: false,
        properties: {
          address: { type: 'string', description: "The address, or an erased recipient's keyed hash (`hmac-sha256:<hex>`)." },
          reason: ref('schemas/SuppressionReason'),
          message_id: { type: ['integer', 'null'], description: 'The message whose bounce, complaint or unsubscribe listed it; null for one added by hand.' },
          created_at: { type: 'string', format: 'date-time' },
        },
      },
      SuppressionPage: {
        type: 'object',
        required: ['results', 'next'],
        additionalProperties: false,
        properties: {
          results: { type: 'array', maxItems: listLimits.max, items: ref('schemas/Suppression') },
          next: { type: ['string', 'null'], description: 'The cursor of the next page; null on the last page.' },
        },
      },
      SuppressionsRequest: {
        type: 'object',
        required: ['addresses'],
        additionalProperties: false,
        properties: {
          addresses: { type: 'array', minItems: 1, maxItems: maxSuppressionsAdded, items: { type: 'string', format: 'email', maxLength: maxRecipientLength } },
        },
      },
      AddedSuppressions: {
        type: 'object',
        required: ['results'],
        additionalProperties: false,
        properties: {
          results: {
            type: 'array',
            items: {
              type: 'object',
              required: ['address', 'reason', 'message_id', 'created_at', 'added'],
              additionalProperties: false,
              properties: {
                address: { type: 'string' },
                reason: ref('schemas/SuppressionReason'),
                message_id: { type: ['integer', 'null'] },
                created_at: { type: 'string', format: 'date-time' },
                added: { type: 'boolean', description: 'False when the address was already listed: the entry shown is the earlier one.' },
              },
            },
          },
        },
      },
      ...domainSchemas(),
      ...webhookSchemas(),
      ...templates.schemas,
      ...statsSchemas,
      Detail: {
        type: 'object',
        required: ['detail'],
        additionalProperties: false,
        properties: { detail: { type: 'string', description: 'Human-readable, in the negotiated language.' } },
      },
      FieldErrors: {
        type: 'object',
        minProperties: 1,
        description: 'Each refused field with its messages.',
        additionalProperties: { type: 'array', minItems: 1, items: { type: 'string' } },
      },
    },
    headers: {
      'X-Request-ID': { description: "The caller's request id when sane, else a new UUID.", required: true, schema: { type: 'string' } },
      'Cache-Control': { description: 'Always `no-store`.', required: true, schema: { type: 'string', const: 'no-store' } },
      'Content-Language': { description: 'Language of the texts in the body.', required: true, schema: { enum: ['en', 'es'] } },
      RateLimit: {
        description: 'IETF draft-ietf-httpapi-ratelimit-headers: requests remaining and seconds to reset.',
        schema: { type: 'string', pattern: '^"send";r=\\d+;t=\\d+$' },
      },
      'RateLimit-Policy': {
        description:
          'IETF draft-ietf-httpapi-ratelimit-headers: quota per window, e.g. `"send";q=120;w=60`: the API key\'s own rate when the operator set one, else `NOTIFY_PUBLIC_SEND_RATE`.',
        schema: { type: 'string', pattern: '^"send";q=\\d+;w=\\d+$' },
      },
      ReadRateLimit: {
        description: 'IETF draft-ietf-httpapi-ratelimit-headers for the read bucket: requests remaining and seconds to reset.',
        schema: { type: 'string', pattern: '^"read";r=\\d+;t=\\d+$' },
      },
      'ReadRateLimit-Policy': {
        description: 'The read bucket, quota per window, e.g. `"read";q=600;w=60`.',
        schema: { type: 'string', pattern: '^"read";q=\\d+;w=\\d+$' },
      },
      'Retry-After': { description: 'Whole seconds to wait, at least 1.', required: true, schema: { type: 'string', pattern: '^[1-9][0-9]*$' } },
      'Idempotent-Replayed': { description: 'Present, `true`, on a replay.', schema: { type: 'string', const: 'true' } },
      'WWW-Authenticate': { description: 'The challenge: `Api-Key`.', required: true, schema: { type: 'string', const: 'Api-Key' } },
    },
  },
} as const;
