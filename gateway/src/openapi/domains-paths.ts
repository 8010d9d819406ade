// The sending-domain operations and schemas of the OpenAPI document (docs/contract.md, "Sending domains over the
// API"), spread into document.ts, built from the document's shared parts (parts.ts).
import { maxDomainLength } from '../domains/routes.ts';
import { errorBody, json, managedWriteResponses, readRateHeaders, readResponses, ref, requestHeaders, response, type Schema } from './parts.ts';

export function domainPaths(): Record<string, Schema> {
  const description = `A domain the organization's mail is sent From, with the DKIM key it is signed with. Needs the scope
\`domains:write\` for every operation, reads included. Same authentication, \`X-Organization-ID\`, languages and error
shapes as the send endpoint; counted against the read bucket. A domain belongs to the key's organization (every
project of it sees it): another organization's domain is 404 domain_not_found, exactly like a missing one.`;
  const idParameter = { name: 'id', in: 'path', required: true, description: "The domain's `id`.", schema: { type: 'integer', minimum: 1 } };
  const location = { Location: { description: 'The domain, to poll with GET.', required: true, schema: { type: 'string' } } };
  const notFound = response("No domain with this id in the key's organization.", errorBody(['domain_not_found']), readRateHeaders);
  return {
    '/api/v1/domains': {
      get: {
        operationId: 'listDomains',
        summary: "List the organization's sending domains, by name (also served with a trailing slash)",
        description,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        responses: { ...readResponses(), '200': response('Every domain, by name.', ref('schemas/DomainList'), readRateHeaders) },
      },
      post: {
        operationId: 'addDomain',
        summary: 'Add a sending domain and generate its DKIM key (also served with a trailing slash)',
        description: `${description}

The answer lists the DNS record to publish, \`pending\` until a verification finds it. Mail From the deployment's
MAIL_FROM domain is signed with its key from the mailers' next key refresh.`,
        security: [{ ApiKey: [] }],
        parameters: [...requestHeaders],
        requestBody: { required: true, content: json(ref('schemas/DomainRequest')) },
        responses: {
          ...managedWriteResponses(),
          '201': response('The domain, with the record to publish.', ref('schemas/Domain'), { ...readRateHeaders, ...location }),
          '409': response('Some organization already has this domain.', errorBody(['domain_exists']), readRateHeaders),
          '422': response(
            'Fields refused: `domain` missing, not a string, blank, too long or not a domain name; an unknown field.',
            ref('schemas/FieldErrors'),
            readRateHeaders,
          ),
        },
      },
    },
    '/api/v1/domains/{id}': {
      get: {
        operationId: 'getDomain',
        summary: 'Read a sending domain with its DNS records and their verification state (also served with a trailing slash)',
        description,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: { ...readResponses(), '200': response('The domain.', ref('schemas/Domain'), readRateHeaders), '404': notFound },
      },
      delete: {
        operationId: 'removeDomain',
        summary: 'Remove a sending domain and its keys (also served with a trailing slash)',
        description: `${description}

Its mail goes out unsigned from the mailers' next key refresh; its DNS records can be deleted once that mail is delivered.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: { ...readResponses(), '200': response('The domain as it was.', ref('schemas/Domain'), readRateHeaders), '404': notFound },
      },
    },
    '/api/v1/domains/{id}/verify': {
      post: {
        operationId: 'verifyDomain',
        summary: "Ask for the domain's DNS records to be looked up (also served with a trailing slash)",
        description: `${description}

The look-up runs in the background, within about a second (DOMAIN_VERIFY_INTERVAL): poll GET until \`verifying\` is false,
then read each record's \`status\`. No body.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: {
          ...readResponses(),
          '202': response('Accepted: the domain, `verifying` true.', ref('schemas/Domain'), { ...readRateHeaders, ...location }),
          '404': notFound,
        },
      },
    },
    '/api/v1/domains/{id}/rotate-dkim': {
      post: {
        operationId: 'rotateDomainDkim',
        summary: 'Generate a new DKIM key under a new selector (also served with a trailing slash)',
        description: `${description}

The new key's record is listed as \`dkim_rotation\`, \`pending\`; the current key keeps signing until a verification finds
the new record, and then the new key signs (from the mailers' next key refresh). Rotating again while one is pending
replaces the pending key. No body.`,
        security: [{ ApiKey: [] }],
        parameters: [idParameter, ...requestHeaders],
        responses: {
          ...readResponses(),
          '200': response('The domain, with the new record to publish.', ref('schemas/Domain'), readRateHeaders),
          '404': notFound,
        },
      },
    },
  };
}

export function domainSchemas(): Record<string, Schema> {
  const recordStatus = { enum: ['pending', 'verified', 'failed'], description: '`pending` until a verification looked the record up.' };
  return {
    DomainRequest: {
      type: 'object',
      required: ['domain'],
      additionalProperties: false,
      properties: {
        domain: { type: 'string', minLength: 1, maxLength: maxDomainLength, description: 'The domain mail is sent From, such as mail.example.com.' },
      },
    },
    DomainRecord: {
      type: 'object',
      required: ['purpose', 'type', 'name', 'value', 'status', 'checked_at', 'failure', 'failure_detail'],
      additionalProperties: false,
      properties: {
        purpose: {
          enum: ['dkim', 'dkim_rotation'],
          description: '`dkim`: the key mail is signed with; `dkim_rotation`: the key that signs once its record verifies.',
        },
        type: { const: 'TXT' },
        name: { type: 'string', description: '`<selector>._domainkey.<domain>`.' },
        value: { type: 'string', description: '`v=DKIM1; k=rsa; p=<key>`; longer than 255 characters, so published as several strings.' },
        status: recordStatus,
        checked_at: { type: ['string', 'null'], format: 'date-time', description: 'The last look-up; null before any.' },
        failure: {
          enum: ['record_missing', 'key_mismatch', 'lookup_failed', null],
          description: 'Why it failed: no DKIM record at the name, a record with another key, or no answer from DNS; null unless failed.',
        },
        failure_detail: { type: ['string', 'null'], description: 'The failure in the negotiated language; null unless failed.' },
      },
    },
    Domain: {
      type: 'object',
      required: ['id', 'domain', 'status', 'verifying', 'selector', 'records', 'created_at'],
      additionalProperties: false,
      properties: {
        id: { type: 'integer', minimum: 1 },
        domain: { type: 'string' },
        status: { ...recordStatus, description: "The `dkim` record's status." },
        verifying: { type: 'boolean', description: 'A verification was asked for and has not run yet.' },
        selector: { type: 'string', description: 'The selector mail is signed with now.' },
        records: { type: 'array', minItems: 1, maxItems: 2, items: ref('schemas/DomainRecord'), description: 'The records to publish.' },
        created_at: { type: 'string', format: 'date-time' },
      },
    },
    DomainList: {
      type: 'object',
      required: ['results'],
      additionalProperties: false,
      properties: { results: { type: 'array', items: ref('schemas/Domain') } },
    },
  };
}
