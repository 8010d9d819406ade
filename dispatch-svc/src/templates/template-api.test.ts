import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { templateProblem } from './template-api.ts';
import { ifMatchAllows } from './template-api-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
});

after(() => h.close());

const scope = () => ({ organizationId: h.ids.organizationId, projectId: h.ids.projectId, apiKeyId: h.ids.apiKeyId });
const content = (subject: string): dispatch.ApiTemplateContent => ({ subject, html: `<p>${subject}</p>`, text: subject, variablesSchemaJson: '' });
const create = (slug: string, subject = 'v1') => h.dispatch.call('CreateApiTemplate', { ...scope(), slug, content: content(subject) });
const update = (slug: string, etag: string, subject: string, keepActiveVersion = false) =>
  h.dispatch.call('UpdateApiTemplate', { ...scope(), slug, ifMatch: etag, content: content(subject), keepActiveVersion });
const activate = (slug: string, version: number, ifMatch = '') => h.dispatch.call('ActivateApiTemplateVersion', { ...scope(), slug, version, ifMatch });
const sentVersion = async (slug: string): Promise<number> => {
  const sent = await h.dispatch.call('Send', h.sendRequest({ template: slug }));
  return (await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId: sent.messageId })).templateVersion;
};

test('If-Match: the exact strong tag, one of a list, or *; never a weak one', () => {
  assert.equal(ifMatchAllows('"1-2-3"', '"1-2-3"'), true);
  assert.equal(ifMatchAllows(' "9-9-9" , "1-2-3"', '"1-2-3"'), true);
  assert.equal(ifMatchAllows('*', '"1-2-3"'), true);
  assert.equal(ifMatchAllows('W/"1-2-3"', '"1-2-3"'), false);
  assert.equal(ifMatchAllows('"1-2-4"', '"1-2-3"'), false);
  assert.equal(ifMatchAllows('1-2-3', '"1-2-3"'), false);
});

test("a problem's line and column come from LiquidJS's message, the renderer's prefix dropped", () => {
  assert.deepEqual(templateProblem('html', 'tag "iff" not found, line:2, col:3'), { part: 'html', line: 2, column: 3, message: 'tag "iff" not found' });
  assert.deepEqual(templateProblem('text', 'template "a" version 4: the text could not be rendered: bad thing, line:1, col:9'), {
    part: 'text',
    line: 1,
    column: 9,
    message: 'bad thing',
  });
  assert.deepEqual(templateProblem('', 'rendering took longer than 2000 ms'), { part: '', line: 0, column: 0, message: 'rendering took longer than 2000 ms' });
});

test('a version is numbered after the latest, even after an older one was activated; sends use the activated one', async () => {
  const first = await create('numbered');
  assert.equal(first.template?.version, 1);
  assert.equal(first.template?.active, true);
  const second = await update('numbered', first.etag, 'v2');
  assert.equal(second.template?.version, 2);
  assert.notEqual(second.etag, first.etag);
  const back = await activate('numbered', 1);
  assert.equal(back.template?.subject, 'v1');
  assert.equal(await sentVersion('numbered'), 1);
  const third = await update('numbered', back.etag, 'v3');
  assert.equal(third.template?.version, 3, 'not 2 again');
  assert.equal((await h.dispatch.call('GetApiTemplateVersion', { ...scope(), slug: 'numbered', version: 2 })).subject, 'v2', 'version 2 kept its content');
  assert.equal(await sentVersion('numbered'), 3);
  // notifyctl's PutTemplate numbers after the latest too.
  await activate('numbered', 1);
  const put = await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'numbered', subject: 'v4', html: 'x', text: '' });
  assert.equal(put.version, 4);
});

test('a version kept aside is not used by sends until activated, and moves the ETag', async () => {
  const first = await create('drafted');
  const draft = await update('drafted', first.etag, 'draft', true);
  assert.equal(draft.template?.version, 1);
  assert.equal(draft.latestVersion, 2);
  assert.notEqual(draft.etag, first.etag);
  assert.equal(await sentVersion('drafted'), 1);
  await assertRefused(update('drafted', first.etag, 'late'), status.FAILED_PRECONDITION, 'precondition_failed');
  await assertRefused(activate('drafted', 2, first.etag), status.FAILED_PRECONDITION, 'precondition_failed');
  const used = await activate('drafted', 2, draft.etag);
  assert.equal(used.template?.subject, 'draft');
  assert.equal(await sentVersion('drafted'), 2);
  const versions = await h.dispatch.call('ListApiTemplateVersions', { ...scope(), slug: 'drafted' });
  assert.deepEqual(
    versions.versions.map((version) => [version.version, version.active]),
    [
      [2, true],
      [1, false],
    ],
  );
  await assertRefused(activate('drafted', 9), status.NOT_FOUND, 'template_version_not_found');
});

test('a deleted template is not found, not sendable, its messages still viewable, and its slug can be created again', async () => {
  const first = await create('gone', 'old');
  const sent = await h.dispatch.call('Send', h.sendRequest({ template: 'gone' }));
  await h.dispatch.call('DeleteApiTemplate', { ...scope(), slug: 'gone', ifMatch: first.etag });
  await assertRefused(h.dispatch.call('GetApiTemplate', { ...scope(), slug: 'gone' }), status.NOT_FOUND, 'template_not_found');
  await assertRefused(h.dispatch.call('Send', h.sendRequest({ template: 'gone' })), status.NOT_FOUND, 'template_not_found');
  const again = await create('gone', 'new');
  assert.equal(again.template?.version, 1);
  assert.notEqual(again.template?.id, first.template?.id);
  assert.equal(await sentVersion('gone'), 1);
  // The panel's message view reads the message's version like this (panel/message-view.ts).
  const { rows } = await h.pool.query<{ subject: string }>(
    'SELECT v.subject FROM messages m JOIN template_versions v ON v.template_id = m.template_id AND v.version = m.template_version WHERE m.id = $1',
    [sent.messageId],
  );
  assert.equal(rows[0]?.subject, 'old', "the message keeps its template's content");
});

test("another organization's project has no templates to read, change nor create", async () => {
  await create('mine');
  const foreign = { ...scope(), organizationId: h.ids.organizationId + 1_000 };
  await assertRefused(h.dispatch.call('GetApiTemplate', { ...foreign, slug: 'mine' }), status.NOT_FOUND, 'template_not_found');
  await assertRefused(h.dispatch.call('DeleteApiTemplate', { ...foreign, slug: 'mine', ifMatch: '*' }), status.NOT_FOUND, 'template_not_found');
  await assertRefused(h.dispatch.call('CreateApiTemplate', { ...foreign, slug: 'theirs', content: content('x') }), status.NOT_FOUND, 'project_not_found');
  assert.deepEqual((await h.dispatch.call('ListApiTemplates', { ...foreign, limit: 0, cursor: '' })).templates, []);
});
