import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { validateSendBody } from '../send/validation.ts';
import { type ServedApp, serveApp } from '../testing/serve-app.ts';
import { openApiDocument } from './document.ts';

// Nothing listens on port 1: the document is served without auth-svc or dispatch-svc.
let gateway: ServedApp;

before(async () => {
  gateway = await serveApp({ authAddress: '127.0.0.1:1', dispatchAddress: '127.0.0.1:1' });
});

after(async () => {
  await gateway.close();
});

const plain = (): Record<string, unknown> => JSON.parse(JSON.stringify(openApiDocument)) as Record<string, unknown>;

test('the document is valid OpenAPI 3.1 by the OpenAPI Initiative schema', async () => {
  const validator = new Validator();
  const result = await validator.validate(plain());
  assert.deepEqual(result.errors, undefined);
  assert.equal(result.valid, true);
  assert.equal(validator.version, '3.1');
});

test('GET /api/v1/openapi.json serves the document as JSON, with the headers of every response', async () => {
  const response = await fetch(`${gateway.url}/api/v1/openapi.json`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.ok(response.headers.get('x-request-id'));
  assert.deepEqual(await response.json(), plain());
});

test('the send operation documents every status of the contract and the Api-Key scheme in Authorization', () => {
  const document = plain() as { paths: Record<string, { post: { responses: Record<string, unknown> } }>; components: { securitySchemes: unknown } };
  const responses = document.paths['/api/v1/send/']?.post.responses ?? {};
  assert.deepEqual(Object.keys(responses).sort(), ['202', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '503']);
  assert.deepEqual(document.components.securitySchemes, {
    ApiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: openApiDocument.components.securitySchemes.ApiKey.description },
  });
});

test('the read operations document their statuses, the read bucket and a servers entry for generated clients', () => {
  const document = plain() as { servers: unknown[]; paths: Record<string, { get?: { responses: Record<string, unknown> } }> };
  assert.deepEqual(Object.keys(document.paths['/api/v1/messages']?.get?.responses ?? {}).sort(), ['200', '400', '401', '403', '422', '429', '500', '503']);
  assert.deepEqual(Object.keys(document.paths['/api/v1/messages/{message_id}']?.get?.responses ?? {}).sort(), [
    '200',
    '400',
    '401',
    '403',
    '404',
    '429',
    '500',
    '503',
  ]);
  assert.ok(document.servers.length > 0);
});

test("the documented request schema accepts and refuses what the gateway's validation does", () => {
  const ajv = new Ajv2020({ allErrors: true });
  ajvFormats.default(ajv);
  // The document's own fields are not schema keywords; its schemas are reached through JSON pointers into it.
  ajv.addVocabulary(Object.keys(plain()));
  ajv.addSchema(plain(), 'openapi');
  const documented = ajv.getSchema('openapi#/components/schemas/SendRequest');
  assert.ok(documented);
  const valid = { template: 'welcome_2', to: 'ana@example.com', channel: 'email', data: { name: 'Ana' } };
  const cases: Record<string, unknown>[] = [
    valid,
    { ...valid, template: '' },
    { ...valid, template: 'x'.repeat(100) },
    { ...valid, template: 'x'.repeat(101) },
    { ...valid, template: 'with space' },
    { ...valid, to: `${'a'.repeat(243)}@example.com` },
    { ...valid, to: `${'a'.repeat(244)}@example.com` },
    { ...valid, channel: 'sms' },
    { ...valid, data: [] },
    { ...valid, data: null },
    { ...valid, api_key: 'secret' },
    { template: 'welcome', to: 'ana@example.com', channel: 'email' },
    {},
  ];
  for (const body of cases) assert.equal(documented(body), validateSendBody(body).valid, JSON.stringify(body).slice(0, 80));
});
