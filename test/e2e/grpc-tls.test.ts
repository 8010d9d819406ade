// TLS between the services, against the running system: auth-svc and dispatch-svc serve certificates from a CA made
// for the run, the gateway, the mailers and notifyctl verify them with it, and a message still goes end to end. A
// plaintext client, even with a valid token, gets no answer from a TLS server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient, RemoteError } from '@notify/platform';
import { authProto } from '@notify/proto';
import { createGrpcCertificates, type GrpcCertificates } from '../harness/grpc-certificates.ts';
import { notifyMessageId, readMails } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

let certificates: GrpcCertificates;
let system: System;
let tenant: Tenant;

before(async () => {
  certificates = await createGrpcCertificates();
  system = await startSystem({ grpcTls: certificates });
  tenant = await system.createTenant('grpc-tls');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
  await certificates?.remove();
});

test('every service is given the certificate or the CA it needs', () => {
  for (const server of ['auth-svc', 'dispatch-svc'] as const) {
    const env = system.stack.serviceEnv(server);
    assert.equal(env.GRPC_TLS_CERT_FILE, certificates.cert, server);
    assert.equal(env.GRPC_TLS_KEY_FILE, certificates.key, server);
  }
  for (const client of ['gateway', 'mailer-svc', 'bounce-svc'] as const)
    assert.equal(system.stack.serviceEnv(client).GRPC_TLS_CA_FILE, certificates.ca, client);
});

test('a message sent through the gateway over TLS reaches the relay and notifyctl follows it over TLS', async () => {
  const response = await system.send(tenant, validBody('welcome', { to: 'tls@example.com' }));
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  await waitFor(async () => ((await readMails(system.resources.mailDir)).some((mail) => notifyMessageId(mail) === id) ? true : undefined), {
    timeoutMs: 15_000,
    what: 'the email',
  });
  const listed = await waitFor(
    async () => {
      const page = JSON.parse(await system.notifyctlOk('messages', 'list', '--project', String(tenant.projectId), '--json')) as {
        messages: { id: string; state: string }[];
      };
      return page.messages.find((message) => Number(message.id) === id && message.state === 'sent');
    },
    { timeoutMs: 10_000, what: 'notifyctl lists the message as sent' },
  );
  assert.ok(listed);
  // The mailer asked dispatch-svc for its DKIM key at start, over TLS: a refused channel would have been logged.
  const mailer = system.stack.logs.lines().filter((line) => line.source.startsWith('mailer-svc'));
  assert.ok(!mailer.some((line) => line.text.includes('fetching the DKIM key failed')), mailer.map((line) => line.text).join('\n'));
});

test('a plaintext client holding the right token is refused by the TLS server', async () => {
  const plaintext = new GrpcClient(authProto.AuthAdminService.service, system.stack.env.AUTH_SVC_ADDR, {
    token: system.stack.env.ADMIN_TOKEN,
    deadlineMs: 3_000,
  });
  try {
    await assert.rejects(plaintext.call('ListPlans', {}), (error: unknown) => error instanceof RemoteError && error.status === status.UNAVAILABLE);
  } finally {
    plaintext.close();
  }
  assert.ok((await system.authAdmin.call('ListPlans', {})).plans.length > 0, 'the same call with the CA succeeds');
});
