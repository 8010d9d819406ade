// Least privilege between the services, against the running system: each component holds its own token, and a token
// is accepted only on the methods its holder needs. A leaked mailer token cannot send for any organization, a leaked
// gateway token cannot administer, and the refusals name the caller, never its token, in the servers' logs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import { refusal } from '../../harness/refusal.ts';
import { type System, startSystem, type Tenant } from '../../harness/system.ts';
import { validBody } from '../../harness/tenants.ts';
import { waitFor } from '../../harness/wait.ts';

let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('caller-tokens');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

test('a client holding the mailer token cannot call Send', async () => {
  const env = system.stack.env;
  const asMailer = new GrpcClient(dispatchProto.DispatchService.service, env.DISPATCH_SVC_ADDR, { token: env.MAILER_TOKEN, deadlineMs: 5_000 });
  try {
    const request = {
      organizationId: tenant.organizationId,
      projectId: tenant.projectId,
      apiKeyId: tenant.keyId,
      template: 'welcome',
      to: 'stolen@example.com',
      dataJson: '{}',
    };
    assert.equal((await refusal(asMailer.call('Send', request))).status, status.PERMISSION_DENIED);
  } finally {
    asMailer.close();
  }
  const sent = await system.db.query('SELECT 1 FROM messages WHERE recipient = $1', ['stolen@example.com']);
  assert.equal(sent.rowCount, 0, 'nothing was queued');
});

test("the gateway token cannot call admin methods of auth-svc or dispatch-svc, nor the bounce token the mailers' signing keys", async () => {
  const env = system.stack.env;
  const authAdmin = new GrpcClient(authProto.AuthAdminService.service, env.AUTH_SVC_ADDR, { token: env.GATEWAY_TOKEN, deadlineMs: 5_000 });
  const templates = new GrpcClient(dispatchProto.TemplateAdminService.service, env.DISPATCH_SVC_ADDR, { token: env.GATEWAY_TOKEN, deadlineMs: 5_000 });
  const signingKeys = new GrpcClient(dispatchProto.SigningKeyService.service, env.DISPATCH_SVC_ADDR, { token: env.BOUNCE_TOKEN, deadlineMs: 5_000 });
  try {
    assert.equal((await refusal(authAdmin.call('ListPlans', {}))).status, status.PERMISSION_DENIED);
    assert.equal((await refusal(templates.call('ListTemplates', { projectId: tenant.projectId }))).status, status.PERMISSION_DENIED);
    assert.equal((await refusal(signingKeys.call('GetSigningKey', { domain: 'example.com' }))).status, status.PERMISSION_DENIED);
  } finally {
    authAdmin.close();
    templates.close();
    signingKeys.close();
  }
  // The services' output reaches the stack's log a moment after the answer.
  const logged = (source: string, caller: string) => () =>
    system.stack.logs
      .lines()
      .some((line) => line.source === source && line.text.includes('the caller may not call this method') && line.text.includes(`"caller":"${caller}"`));
  await waitFor(logged('auth-svc', 'gateway'), { timeoutMs: 5_000, what: 'auth-svc logs the refused gateway call' });
  await waitFor(logged('dispatch-svc', 'bounce'), { timeoutMs: 5_000, what: 'dispatch-svc logs the refused bounce call' });
  const everything = system.stack.logs
    .lines()
    .map((line) => line.text)
    .join('\n');
  for (const token of [env.GATEWAY_TOKEN, env.MAILER_TOKEN, env.BOUNCE_TOKEN, env.ADMIN_TOKEN]) assert.ok(!everything.includes(token), 'no token in any log');
});

test('with each component on its own token the system still sends, and notifyctl lists the message with the admin token', async () => {
  const response = await system.send(tenant, validBody('welcome', { to: 'tokens@example.com' }));
  assert.equal(response.status, 202, response.text);
  const listed = JSON.parse(await system.notifyctlOk('messages', 'list', '--project', String(tenant.projectId), '--json')) as { messages: { id: string }[] };
  assert.ok(listed.messages.some((message) => Number(message.id) === response.body.message_id));
});
