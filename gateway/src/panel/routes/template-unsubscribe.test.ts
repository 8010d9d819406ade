// The templates pages' one-click unsubscribe setting through the panel's real gRPC clients and sessions on a real
// Redis, against stand-ins of PanelAuthService and PanelService: shown to everyone, switched by operators (behind CSRF)
// within the user's organization.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, type dispatch, dispatchProto } from '@notify/proto';
import { panelClient, servePanelAccess } from '../../testing/panel-client.ts';
import { gatewayCaller, type ServedApp, serveApp } from '../../testing/serve-app.ts';
import { standIn, standInServer } from '../../testing/stand-in.ts';

const createdAt = '2026-01-31T09:00:00.000Z';
const organization = { id: 3, name: 'alpha', planId: 1, createdAt, messageRetention: '' };
const projects = [{ id: 21, organizationId: 3, name: 'web', createdAt }];
const operator: auth.PanelUser__Output = {
  id: 5,
  organizationId: 3,
  email: 'op@alpha.example',
  role: 'operator',
  createdAt,
  passwordChangedAt: createdAt,
  disabledAt: '',
};
const viewer: auth.PanelUser__Output = { ...operator, id: 6, email: 'viewer@alpha.example', role: 'viewer' };

let template: dispatch.Template__Output;
const toggles: dispatch.SetProjectTemplateUnsubscribeRequest__Output[] = [];
let services: GrpcServer;
let gateway: ServedApp;
const { signIn, get, post } = panelClient(() => gateway);

before(async () => {
  template = {
    id: 1,
    projectId: 21,
    slug: 'news',
    version: 4,
    active: true,
    subject: 'News',
    html: '<p>News</p>',
    text: 'News',
    variablesSchemaJson: '',
    updatedAt: createdAt,
    unsubscribe: false,
  };
  services = standInServer();
  servePanelAccess(services, { users: [operator, viewer], organization, projects });
  services.add(
    dispatchProto.PanelService.service,
    standIn(dispatchProto.PanelService.service, {
      async ListProjectTemplates() {
        return { templates: [template] };
      },
      async PreviewTemplate(request) {
        if (request.slug !== template.slug) throw new UserError(status.NOT_FOUND, 'template_not_found', 'no such template');
        return { template, dataJson: '{}', subject: 'News', html: '<p>News</p>', text: 'News', renderError: '', dataFaults: [] };
      },
      async SetProjectTemplateUnsubscribe(request) {
        toggles.push({ ...request });
        if (request.organizationId !== 3 || request.projectId !== 21 || request.slug !== template.slug)
          throw new UserError(status.NOT_FOUND, 'template_not_found', 'no such template');
        template = { ...template, unsubscribe: request.unsubscribe };
        return template;
      },
    }),
    [gatewayCaller],
  );
  const address = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  gateway = await serveApp({ authAddress: address, dispatchAddress: address, panelEnv: {} });
});

after(async () => {
  await gateway?.close();
  await services?.close(1_000);
});

const page = '/panel/projects/21/templates/news';

describe('one-click unsubscribe on the templates pages', () => {
  test('the list and the template page show the setting; only operators get the switch', async () => {
    const list = await (await get('/panel/projects/21/templates', await signIn(viewer))).text();
    assert.match(list, /<th scope="col">One-click unsubscribe<\/th>/);
    const seen = await (await get(page, await signIn(viewer), { 'accept-language': 'es' })).text();
    assert.match(seen, /no llevan cabeceras de baja/);
    assert.doesNotMatch(seen, /\/unsubscribe"/);
    const operated = await (await get(page, await signIn(operator))).text();
    assert.match(operated, /action="\/panel\/projects\/21\/templates\/news\/unsubscribe"/);
    assert.match(operated, /Add one-click unsubscribe/);
  });

  test('an operator switches it on with the CSRF token, within the organization, and sees it saved', async () => {
    const who = await signIn(operator);
    const switched = await post(`${page}/unsubscribe`, who, [
      ['_csrf', who.csrf],
      ['unsubscribe', 'true'],
    ]);
    assert.equal(switched.status, 303);
    assert.equal(switched.headers.get('location'), `${page}?changed=unsubscribe`);
    assert.deepEqual(toggles.at(-1), { projectId: 21, organizationId: 3, slug: 'news', unsubscribe: true });
    const after = await (await get(`${page}?changed=unsubscribe`, who)).text();
    assert.match(after, /Saved: messages accepted from now on/);
    assert.match(after, /Remove one-click unsubscribe/);
  });

  test('without the CSRF token, or as a viewer, nothing changes', async () => {
    const count = toggles.length;
    const who = await signIn(operator);
    assert.equal((await post(`${page}/unsubscribe`, who, [['unsubscribe', 'false']])).status, 403);
    const viewing = await signIn(viewer);
    assert.equal(
      (
        await post(`${page}/unsubscribe`, viewing, [
          ['_csrf', viewing.csrf],
          ['unsubscribe', 'false'],
        ])
      ).status,
      403,
    );
    assert.equal(toggles.length, count);
    assert.equal(
      (
        await post('/panel/projects/21/templates/missing/unsubscribe', who, [
          ['_csrf', who.csrf],
          ['unsubscribe', 'false'],
        ])
      ).status,
      404,
    );
  });
});
