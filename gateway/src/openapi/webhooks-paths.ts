// The OpenAPI paths and schemas of the webhook endpoint routes (gateway/src/webhooks/routes.ts), spread into
// document.ts, built from the document's shared parts (parts.ts).
import { maxWebhookUrlLength, webhookEventTypes, webhookTestEventType } from '@notify/proto';
import { listLimits } from '../messages/read-query.ts';
import { errorBody, json, managedWriteResponses, pageParameters, readRateHeaders, readResponses, ref, requestHeaders, response, type Schema } from './parts.ts';

const description = `The project's webhook endpoints. Every route needs the scope \`webhooks:write\`, reads included (an endpoint's URL and
its attempts log are as sensitive as its settings). Same authentication, \`X-Organization-ID\`, languages and error shapes as
the send endpoint; counted against the read bucket. A key sees only its own project's endpoints: another project's is 404
webhook_not_found, exactly like a missing one. Each endpoint shows its latest attempt (\`last_delivery\`) and its latest failed
attempt (\`last_error\`). Deliveries are signed per Standard Webhooks (\`webhook-id\`, \`webhook-timestamp\`,
\`webhook-signature\`); every change is recorded in the audit log with the key that made it.`;

const idParameter = { name: 'id', in: 'path', required: true, description: "The endpoint's `id`.", schema: { type: 'integer', minimum: 1 } };
const notFound = (): Schema => response("No endpoint with this id in the key's project.", errorBody(['webhook_not_found']), readRateHeaders);
const fieldErrors = (what: string): Schema => response(what, ref('schemas/FieldErrors'), readRateHeaders);

const urlDescription = `An absolute https URL (plain http only where the operator allows private targets), at most ${maxWebhookUrlLength} characters, without a user name or password.`;
const eventTypesDescription = 'The event types the endpoint receives, in any order; none or an empty list: all six.';

/** An endpoint's fields, every one always present. */
const endpointProperties = (): Record<string, Schema> => ({
  id: { type: 'integer' },
  url: { type: 'string' },
  event_types: { type: 'array', items: ref('schemas/WebhookEventType') },
  enabled: { type: 'boolean', description: 'False while deliveries are held: by the key (`enabled: false`), a 410 answer, or 5 days of failures.' },
  disabled_reason: { enum: ['operator', 'gone', 'failing', null], description: 'Why it is disabled; null while enabled.' },
  failing_since: { type: ['string', 'null'], format: 'date-time', description: 'Start of the current run of failed attempts; null after a success.' },
  previous_secret_expires_at: {
    type: ['string', 'null'],
    format: 'date-time',
    description: 'Until when the secret before the last rotation still signs beside the current one; null when none does.',
  },
  created_at: { type: 'string', format: 'date-time' },
  updated_at: { type: 'string', format: 'date-time' },
  last_delivery: {
    description: 'The latest attempt; null before the first.',
    oneOf: [
      { type: 'null' },
      {
        type: 'object',
        required: ['attempted_at', 'status_code', 'succeeded'],
        additionalProperties: false,
        properties: {
          attempted_at: { type: 'string', format: 'date-time' },
          status_code: { type: ['integer', 'null'], description: "The endpoint's answer; null when none came." },
          succeeded: { type: 'boolean', description: 'A 2xx answer within the timeout.' },
        },
      },
    ],
  },
  last_error: {
    description: 'The latest failed attempt; null when none failed.',
    oneOf: [
      { type: 'null' },
      {
        type: 'object',
        required: ['attempted_at', 'status_code', 'error'],
        additionalProperties: false,
        properties: {
          attempted_at: { type: 'string', format: 'date-time' },
          status_code: { type: ['integer', 'null'], description: 'The answer that was not a 2xx; null when none came.' },
          error: { type: ['string', 'null'], description: 'Why no answer came (timeout, refused address, connection error); null when one did.' },
        },
      },
    ],
  },
});

export function webhookPaths(): Record<string, Schema> {
  return { ...endpointPaths(), ...actionPaths() };
}

/** The collection and its items. */
function endpointPaths(): Record<string, Schema> {
  return {
    '/api/v1/webhooks': {
      get: {
        operationId: 'listWebhooks',
        summary: "List the key's project's webhook endpoints, oldest first (also served with a trailing slash)",
        description,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        responses: { ...readResponses(), '200': response('Every endpoint of the project.', ref('schemas/WebhookList'), readRateHeaders) },
      },
      post: {
        operationId: 'createWebhook',
        summary: 'Add a webhook endpoint; its signing secret is in this answer only (also served with a trailing slash)',
        description: `${description}

The answer carries \`secret\` (\`whsec_<base64>\`), shown this once: keep it to verify the signatures. A project has at most
\`NOTIFY_WEBHOOK_ENDPOINTS_PER_PROJECT\` endpoints (20 by default), enabled or not: one more is 409 webhook_limit_reached.`,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        requestBody: { required: true, content: json(ref('schemas/WebhookRequest')) },
        responses: {
          ...managedWriteResponses(),
          '201': response('The endpoint, enabled, with its secret.', ref('schemas/CreatedWebhook'), readRateHeaders),
          '409': response('The project has as many endpoints as it may have.', errorBody(['webhook_limit_reached']), readRateHeaders),
          '422': fieldErrors('Fields refused: `url` missing or refused (the message says why), an unknown event type, an unknown field.'),
        },
      },
    },
    '/api/v1/webhooks/{id}': {
      get: {
        operationId: 'getWebhook',
        summary: 'Read a webhook endpoint (also served with a trailing slash)',
        description,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: { ...readResponses(), '200': response('The endpoint.', ref('schemas/Webhook'), readRateHeaders), '404': notFound() },
      },
      patch: {
        operationId: 'updateWebhook',
        summary: 'Change the URL, the event types or whether it is enabled (also served with a trailing slash)',
        description: `${description}

Give any of \`url\`, \`event_types\` and \`enabled\`; the others stay. Enabling clears \`disabled_reason\` and the run of failures;
disabling holds deliveries (they are recorded failed, not sent). Deliveries pending go to the new URL; events from now on
follow the new types.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        requestBody: { required: true, content: json(ref('schemas/WebhookUpdate')) },
        responses: {
          ...managedWriteResponses(),
          '200': response('The endpoint, changed.', ref('schemas/Webhook'), readRateHeaders),
          '404': notFound(),
          '422': fieldErrors('Fields refused (each with its messages), or none of the three given (`non_field_errors`).'),
        },
      },
      delete: {
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint with its pending deliveries and attempts log (also served with a trailing slash)',
        description,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: { ...readResponses(), '200': response('The endpoint deleted.', ref('schemas/Webhook'), readRateHeaders), '404': notFound() },
      },
    },
  };
}

/** What is done to one endpoint besides reading and changing it: a new secret, a test event, its attempts log. */
function actionPaths(): Record<string, Schema> {
  return {
    '/api/v1/webhooks/{id}/rotate-secret': {
      post: {
        operationId: 'rotateWebhookSecret',
        summary: 'Give the endpoint a new signing secret, shown in this answer only (also served with a trailing slash)',
        description: `${description}

The previous secret keeps signing beside the new one for 24 hours (\`previous_secret_expires_at\`): each request carries both
signatures, so a receiver verifies with either while it moves to the new one. A second rotation within those hours drops the
oldest secret.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: {
          ...readResponses(),
          '200': response('The endpoint with its new secret.', ref('schemas/CreatedWebhook'), readRateHeaders),
          '404': notFound(),
        },
      },
    },
    '/api/v1/webhooks/{id}/test': {
      post: {
        operationId: 'testWebhook',
        summary: 'Send the endpoint a test event (also served with a trailing slash)',
        description: `${description}

Queues one \`${webhookTestEventType}\` event for this endpoint alone, whatever types it receives: it is delivered, signed, retried and
recorded in the attempts log exactly as any event. Its body: \`{"type": "${webhookTestEventType}", "timestamp": "<RFC 3339>", "data":
{"endpoint_id": <id>}}\`. A disabled endpoint is 409 webhook_disabled.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: {
          ...readResponses(),
          '202': response('The event, queued.', ref('schemas/WebhookTestEvent'), readRateHeaders),
          '404': notFound(),
          '409': response('The endpoint is disabled.', errorBody(['webhook_disabled']), readRateHeaders),
        },
      },
    },
    '/api/v1/webhooks/{id}/attempts': {
      get: {
        operationId: 'listWebhookAttempts',
        summary: "The endpoint's attempts log, newest first (also served with a trailing slash)",
        description: `${description}

Every attempt of every event to this endpoint, retries and test events included. Keyset pagination: pass \`next\` back as
\`cursor\`.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders, ...pageParameters('Attempts', 16)],
        responses: {
          ...readResponses(),
          '200': response('A page of attempts.', ref('schemas/WebhookAttemptPage'), readRateHeaders),
          '404': notFound(),
          '422': fieldErrors('Query parameters refused, each with its messages.'),
        },
      },
    },
  };
}

export function webhookSchemas(): Record<string, Schema> {
  return {
    WebhookEventType: { enum: [...webhookEventTypes] },
    Webhook: { type: 'object', required: Object.keys(endpointProperties()), additionalProperties: false, properties: endpointProperties() },
    CreatedWebhook: {
      type: 'object',
      required: [...Object.keys(endpointProperties()), 'secret'],
      additionalProperties: false,
      properties: {
        ...endpointProperties(),
        secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'The signing secret (Standard Webhooks), shown in this answer only.' },
      },
    },
    WebhookList: {
      type: 'object',
      required: ['results'],
      additionalProperties: false,
      properties: { results: { type: 'array', items: ref('schemas/Webhook') } },
    },
    WebhookRequest: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', maxLength: maxWebhookUrlLength, description: urlDescription },
        event_types: { type: 'array', items: ref('schemas/WebhookEventType'), description: eventTypesDescription },
      },
    },
    WebhookUpdate: {
      type: 'object',
      minProperties: 1,
      additionalProperties: false,
      properties: {
        url: { type: 'string', maxLength: maxWebhookUrlLength, description: urlDescription },
        event_types: { type: 'array', items: ref('schemas/WebhookEventType'), description: eventTypesDescription },
        enabled: { type: 'boolean' },
      },
    },
    WebhookTestEvent: {
      type: 'object',
      required: ['event_id', 'type', 'created_at'],
      additionalProperties: false,
      properties: {
        event_id: { type: 'string', pattern: '^evt_[0-9]+$', description: 'The `webhook-id` header the event is delivered with.' },
        type: { const: webhookTestEventType },
        created_at: { type: 'string', format: 'date-time' },
      },
    },
    WebhookAttemptPage: {
      type: 'object',
      required: ['results', 'next'],
      additionalProperties: false,
      properties: {
        results: {
          type: 'array',
          maxItems: listLimits.max,
          items: {
            type: 'object',
            required: ['id', 'event_id', 'event_type', 'message_id', 'attempt', 'attempted_at', 'status_code', 'latency_ms', 'response_body', 'error'],
            additionalProperties: false,
            properties: {
              id: { type: 'integer' },
              event_id: {
                type: 'string',
                pattern: '^evt_[0-9]+$',
                description: 'The `webhook-id` the attempt carried: the same on every attempt of one event.',
              },
              event_type: { type: 'string', description: `One of the event types, or \`${webhookTestEventType}\`.` },
              message_id: { type: ['integer', 'null'], description: 'The message the event is about; null for a test event.' },
              attempt: { type: 'integer', minimum: 1 },
              attempted_at: { type: 'string', format: 'date-time' },
              status_code: { type: ['integer', 'null'], description: 'The answer; null when none came.' },
              latency_ms: { type: 'integer', minimum: 0 },
              response_body: { type: ['string', 'null'], description: 'The first KiB of the answer.' },
              error: { type: ['string', 'null'], description: 'Why no usable answer came; null when one did.' },
            },
          },
        },
        next: { type: ['string', 'null'], description: 'The cursor of the next page; null on the last page.' },
      },
    },
  };
}
