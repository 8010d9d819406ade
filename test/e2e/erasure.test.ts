// Erasure (docs/operations.md, "Erasure (GDPR right to be forgotten)") against the running system: a recipient with
// sent, failed (an SMTP reply quoting the address), scheduled and labelled messages, webhook deliveries and a
// suppression entry in one project, and the same address in another project. After `notifyctl messages erase` no row
// of the run's database holds the address, except the other project's, which keep it; the messages stay with their
// states and read back with the marker; the address stays suppressed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitForStates } from '../harness/delivery-audit.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const address = 'erase.me@example.com';
/** How the failed message is addressed: matching is case-insensitive, and the relay quotes it back as given. */
const refused = 'Erase.Me@EXAMPLE.com';
const marker = 'erased@erased.invalid';

let system: System;
let tenant: Tenant;
let neighbour: Tenant;
const receivers: WebhookReceiver[] = [];
/** The tenant's messages to the address, by what they became. */
const ids = { sent: [] as number[], failed: 0, scheduled: 0 };
let neighbourId = 0;

before(async () => {
  system = await startSystem({
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', NOTIFY_PUBLIC_READ_RATE: '100000/min', NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' },
    smtpReply: (envelope) =>
      envelope.to.startsWith('Erase.Me@') ? { code: 550, message: `5.1.1 <${refused}>: Recipient address rejected: User unknown` } : undefined,
  });
  tenant = await system.createTenant('erasure');
  neighbour = await system.createTenant('erasure-neighbour');
  for (const each of [tenant, neighbour]) {
    await system.putTemplate(each.projectId, 'welcome');
    receivers.push(await subscribedReceiver(system.db, each, ['message.sent', 'message.failed']));
  }
  const accept = async (as: Tenant, body: Record<string, unknown>): Promise<number> => {
    const response = await system.send(as, validBody('welcome', body));
    assert.equal(response.status, 202, response.text);
    return response.body.message_id as number;
  };
  ids.sent.push(await accept(tenant, { to: address, data: { name: 'Erin', contact: address } }));
  ids.sent.push(await accept(tenant, { to: address.toUpperCase(), tags: ['erasure'], metadata: { customer: address } }));
  ids.failed = await accept(tenant, { to: refused });
  ids.scheduled = await accept(tenant, { to: address, send_at: new Date(Date.now() + 3_600_000).toISOString() });
  neighbourId = await accept(neighbour, { to: address, data: { contact: address }, metadata: { customer: address } });
  await waitForStates(system.db, [...ids.sent, ids.failed, neighbourId], { timeoutMs: 20_000 });
  // Every sent or failed transition has reached its endpoint, so webhook events, deliveries and attempts all exist.
  await waitFor(() => receivers[0]?.received.length === 3 && receivers[1]?.received.length === 1, { timeoutMs: 20_000, what: 'the webhooks to be delivered' });
  // The hard bounce suppressed `refused`; an operator suppresses the address as written too.
  await system.notifyctlOk('suppression', 'add', '--project', String(tenant.projectId), '--address', address);
});

after(async () => {
  await Promise.all(receivers.map((receiver) => receiver.stop()));
  await system?.stop();
});

interface Found {
  table: string;
  row: Record<string, unknown>;
}

/** Every row of every table of the run's database whose columns, as text, contain the address in any case. */
async function rowsHoldingAddress(): Promise<Found[]> {
  const { rows: tables } = await system.db.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
  );
  const found: Found[] = [];
  for (const { name } of tables) {
    const { rows } = await system.db.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(t) AS row FROM "${name}" t WHERE strpos(lower(to_jsonb(t)::text), lower($1)) > 0`,
      [address],
    );
    found.push(...rows.map(({ row }) => ({ table: name, row })));
  }
  return found;
}

/** Whether a row is the neighbour's: its project, its message, or its message's webhook event. */
async function neighbourRow(found: Found): Promise<boolean> {
  const { row } = found;
  if (row.project_id !== undefined) return row.project_id === neighbour.projectId;
  if (row.message_id !== undefined) return row.message_id === neighbourId;
  if (row.event_id !== undefined) {
    const { rows } = await system.db.query('SELECT 1 FROM webhook_events WHERE id = $1 AND message_id = $2', [row.event_id, neighbourId]);
    return rows.length === 1;
  }
  return false;
}

async function read(id: number): Promise<HttpResult> {
  return system.request(`/api/v1/messages/${id}/`, {
    method: 'GET',
    headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId) },
  });
}

test("notifyctl messages erase leaves no row holding the address but the other project's, keeps the messages with their states, and prints the count", async () => {
  const before = await rowsHoldingAddress();
  const tables = new Set(before.map((found) => found.table));
  for (const table of ['messages', 'message_events', 'suppressions', 'webhook_events'])
    assert.ok(tables.has(table), `the address is in ${table} before the erasure`);
  const failedBefore = (await read(ids.failed)).body;
  assert.match(String(failedBefore.last_smtp_reply), /Erase\.Me@EXAMPLE\.com/, 'the relay quoted the address');

  const printed = JSON.parse(
    await system.notifyctlOk('messages', 'erase', '--project', String(tenant.projectId), '--address', 'ERASE.me@example.com', '--json'),
  ) as Record<string, number>;
  assert.equal(printed.erased, 4, JSON.stringify(printed));
  assert.equal(printed.canceled, 1);
  assert.equal(printed.suppressions, 2, "the operator's entry and the hard bounce's");

  const left = await rowsHoldingAddress();
  const strays = [];
  for (const found of left) if (!(await neighbourRow(found))) strays.push(found);
  assert.deepEqual(strays, [], "no row but the other project's holds the address");
  const neighbourTables = new Set(left.map((found) => found.table));
  for (const table of ['messages', 'webhook_events']) assert.ok(neighbourTables.has(table), `the other project's ${table} keep the address`);
  const { rows: neighbours } = await system.db.query('SELECT recipient, data FROM messages WHERE id = $1', [neighbourId]);
  assert.deepEqual(neighbours, [{ recipient: address, data: { contact: address } }]);

  const expected = new Map<number, string>([...ids.sent.map((id) => [id, 'sent'] as const), [ids.failed, 'failed'], [ids.scheduled, 'canceled']]);
  for (const [id, state] of expected) {
    const response = await read(id);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.status, state, `message ${id}`);
    assert.equal(response.body.to, marker);
    assert.ok((response.body.events as unknown[]).length > 0, 'the timeline stays');
    assert.doesNotMatch(response.text, /erase\.me@example\.com/i);
  }
  assert.match(String((await read(ids.failed)).body.last_smtp_reply), /^550 .*<erased@erased\.invalid>/);
  const { rows: erased } = await system.db.query<{ data: unknown; metadata: unknown; attempts: number }>(
    'SELECT data, metadata, attempts FROM messages WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids.sent],
  );
  assert.deepEqual(
    erased.map((row) => [row.data, row.metadata]),
    [
      [{}, {}],
      [{}, { customer: marker }],
    ],
  );
  assert.ok(
    erased.every((row) => row.attempts === 1),
    'counts stay',
  );
});

test('the erased address stays suppressed in its project until its hash is removed, a second erase changes nothing, and the other project still sends to it', async () => {
  const again = await system.send(tenant, validBody('welcome', { to: address }));
  assert.equal(again.status, 422, again.text);
  assert.match(String((again.body.to as string[])[0]), /suppressed/);
  const listed = JSON.parse(await system.notifyctlOk('suppression', 'list', '--project', String(tenant.projectId), '--json')) as {
    suppressions: { address: string }[];
  };
  assert.ok(listed.suppressions.length === 2 && listed.suppressions.every((entry) => /^hmac-sha256:[0-9a-f]{64}$/.test(entry.address)), JSON.stringify(listed));

  const text = await system.notifyctlOk('messages', 'erase', '--project', String(tenant.projectId), '--address', address);
  assert.match(text, new RegExp(`^erased 0 messages of project ${tenant.projectId}\\n`));
  assert.match(text, /suppression entries kept as a hash +0/);
  assert.equal((await system.send(neighbour, validBody('welcome', { to: address }))).status, 202);

  // The person may ask for the hash to go too: removed by its name, the address is accepted again.
  const hashed = listed.suppressions.map((entry) => entry.address);
  for (const entry of hashed) await system.notifyctlOk('suppression', 'remove', '--project', String(tenant.projectId), '--address', entry);
  assert.equal((await system.send(tenant, validBody('welcome', { to: address }))).status, 202);
});
