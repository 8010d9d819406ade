// Webhook secrets at rest, on a run-unique database: what creation and rotation store, and the sealing of secrets a
// release that did not seal them left in clear.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GrpcClient } from '@notify/platform';
import { webhookSecretSealContext } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { type Harness, startHarness } from '../testing/harness.ts';
import { sealClearSecrets } from './secret-sealing.ts';

let h: Harness;
let webhooks: GrpcClient<typeof dispatchProto.WebhookAdminService.service>;

before(async () => {
  h = await startHarness();
  webhooks = new GrpcClient(dispatchProto.WebhookAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
});

after(async () => {
  webhooks?.close();
  await h?.close();
});

interface StoredSecrets {
  readonly secret: string | null;
  readonly previousSecret: string | null;
  readonly sealedSecret: string | null;
  readonly sealedPreviousSecret: string | null;
}

const storedSecrets = async (id: number): Promise<StoredSecrets> =>
  (
    await h.pool.query<StoredSecrets>(
      `SELECT secret, previous_secret AS "previousSecret", sealed_secret AS "sealedSecret", sealed_previous_secret AS "sealedPreviousSecret" FROM webhook_endpoints WHERE id = $1`,
      [id],
    )
  ).rows[0]!;

const open = (sealed: string | null, endpointId: number): string => h.deps.dataKey.open(sealed ?? '', webhookSecretSealContext(endpointId));

/** An endpoint as a release that did not seal secrets wrote it: its secrets in clear. */
async function clearEndpoint(secret: string, previousSecret: string | null): Promise<number> {
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret, previous_secret, previous_secret_expires_at)
     VALUES ($1, $2, 'https://hooks.example.com/', '{message.sent}', $3, $4, now() + interval '24 hours') RETURNING id`,
    [h.ids.projectId, h.ids.organizationId, secret, previousSecret],
  );
  return rows[0]!.id;
}

test('after creating and rotating endpoints no secret is stored in clear, and each sealed one opens under its own endpoint only', async () => {
  const created = await webhooks.call('CreateWebhook', { projectId: h.ids.projectId, url: 'https://hooks.example.com/a' });
  const other = await webhooks.call('CreateWebhook', { projectId: h.ids.projectId, url: 'https://hooks.example.com/b' });
  const id = created.webhook!.id;
  const rotated = await webhooks.call('RotateWebhookSecret', { id });

  const { rows } = await h.pool.query<{ row: string }>('SELECT row_to_json(w)::text AS row FROM webhook_endpoints w WHERE id = ANY ($1::bigint[])', [
    [id, other.webhook!.id],
  ]);
  assert.equal(rows.length, 2);
  for (const { row } of rows) {
    assert.doesNotMatch(row, /whsec_/);
    for (const secret of [created.secret, rotated.secret, other.secret])
      assert.ok(!row.includes(secret.slice('whsec_'.length)), 'no secret in any encoding of it');
  }
  const stored = await storedSecrets(id);
  assert.deepEqual([open(stored.sealedSecret, id), open(stored.sealedPreviousSecret, id)], [rotated.secret, created.secret]);
  assert.equal(open((await storedSecrets(other.webhook!.id)).sealedSecret, other.webhook!.id), other.secret);
  // Copied to another endpoint's row, a sealed secret does not open there.
  for (const sealed of [stored.sealedSecret, stored.sealedPreviousSecret]) assert.throws(() => open(sealed, other.webhook!.id));
});

test('secrets left in clear are sealed once, by one of several replicas sealing at once, with the clear ones emptied', async () => {
  const [current, previous, rotatedFrom] = [
    'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    'whsec_c2VjcmV0LXByZXZpb3VzLTEyMzQ1Njc4OTA=',
    'whsec_cm90YXRlZC1mcm9tLWNsZWFyLTEyMzQ1Njc4',
  ];
  const withPrevious = await clearEndpoint(current, previous);
  // A secret still in clear that is rotated out stays as it was, the previous one, until it is sealed.
  const rotatedClear = await clearEndpoint(rotatedFrom, null);
  const rotation = await webhooks.call('RotateWebhookSecret', { id: rotatedClear });
  const beforeSealing = await storedSecrets(rotatedClear);
  assert.deepEqual([beforeSealing.secret, beforeSealing.previousSecret, beforeSealing.sealedPreviousSecret], [null, rotatedFrom, null]);
  assert.equal(open(beforeSealing.sealedSecret, rotatedClear), rotation.secret);

  const sealed = await Promise.all([
    sealClearSecrets(h.pool, h.deps.dataKey),
    sealClearSecrets(h.pool, h.deps.dataKey),
    sealClearSecrets(h.pool, h.deps.dataKey),
  ]);
  assert.equal(
    sealed.reduce((sum, count) => sum + count, 0),
    2,
    `endpoints sealed by each: ${sealed.join(', ')}`,
  );
  assert.equal(await sealClearSecrets(h.pool, h.deps.dataKey), 0, 'a later pass finds nothing to seal');

  const first = await storedSecrets(withPrevious);
  assert.deepEqual([first.secret, first.previousSecret], [null, null]);
  assert.deepEqual([open(first.sealedSecret, withPrevious), open(first.sealedPreviousSecret, withPrevious)], [current, previous]);
  const second = await storedSecrets(rotatedClear);
  assert.deepEqual([second.secret, second.previousSecret], [null, null]);
  assert.deepEqual([open(second.sealedSecret, rotatedClear), open(second.sealedPreviousSecret, rotatedClear)], [rotation.secret, rotatedFrom]);
  const { rows } = await h.pool.query<{ clear: number }>(
    'SELECT count(*)::int AS clear FROM webhook_endpoints WHERE secret IS NOT NULL OR previous_secret IS NOT NULL',
  );
  assert.equal(rows[0]?.clear, 0);
});

test('an endpoint cannot hold a secret both in clear and sealed', async () => {
  const id = await clearEndpoint('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', null);
  await assert.rejects(h.pool.query(`UPDATE webhook_endpoints SET sealed_secret = 'v1.x.y' WHERE id = $1`, [id]), {
    constraint: 'webhook_endpoints_one_secret',
  });
  await assert.rejects(h.pool.query(`UPDATE webhook_endpoints SET secret = NULL WHERE id = $1`, [id]), { constraint: 'webhook_endpoints_one_secret' });
});
