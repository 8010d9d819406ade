// docs/contract.md, "Recipients that must not be mailed", after `sent`, against the running services: every mail
// leaves with a signed VERP return path; a bounce report (RFC 3464 DSN) or a feedback-loop complaint (RFC 5965 ARF)
// delivered over SMTP to bounce-svc at that path moves the message `sent` → `bounced` / `complained`, suppresses the
// address for a hard bounce or a complaint and emits the matching webhook event; forged, malformed and out-of-scope
// mail is refused with an SMTP code and changes nothing. The last test lets a real MTA write the report: Postfix as the
// relay accepts the mail, is refused the recipient by the next hop, and sends its own DSN to the return path.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseDataKey, readReturnPath, returnPathFor } from '@notify/platform/mail';
import nodemailer from 'nodemailer';
import { startPrivatePostfix } from '../harness/private-postfix.ts';
import { arf, dsn } from '../harness/report-samples.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver, webhooksAbout } from '../harness/webhook-receiver.ts';

let system: System;
let tenant: Tenant;
let receiver: WebhookReceiver;
/** The envelope sender (MAIL FROM) each recipient's mail arrived with at the relay. */
const returnPaths = new Map<string, string>();

before(async () => {
  system = await startSystem({
    env: { NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' },
    smtpReply: (envelope) => {
      returnPaths.set(envelope.to, envelope.from);
      // The far server of the Postfix test: it refuses this recipient, after the relay accepted the mail.
      return envelope.to === 'nobody@example.test'
        ? { code: 550, message: '5.1.1 <nobody@example.test>: Recipient address rejected: User unknown' }
        : undefined;
    },
  });
  tenant = await system.createTenant('bounces');
  await system.putTemplate(tenant.projectId, 'welcome');
  receiver = await subscribedReceiver(system.db, tenant, ['message.bounced', 'message.complained']);
});

after(async () => {
  await receiver?.stop();
  await system?.stop();
});

const dataKey = () => parseDataKey(system.stack.env.NOTIFY_DATA_KEY);
const bounceDomain = () => system.stack.env.BOUNCE_DOMAIN;

/** Sends to `to`, waits until the message is `sent`, and answers its id and the return path its mail carried. */
async function sentMessage(to: string): Promise<{ id: number; returnPath: string }> {
  const response = await system.send(tenant, validBody('welcome', { to }));
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  await waitFor(async () => ((await stateOf(id)) === 'sent' ? true : undefined), { timeoutMs: 15_000, what: `message ${id} sent` });
  const returnPath = returnPaths.get(to);
  assert.ok(returnPath, `the relay saw the envelope of ${to}`);
  return { id, returnPath };
}

async function stateOf(id: number): Promise<string | undefined> {
  return (await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id])).rows[0]?.state;
}

/** Delivers a raw report to bounce-svc over SMTP with a null sender, as an MTA sends a DSN. Resolves to the reply. */
async function report(to: string, raw: string): Promise<{ ok: true; response: string } | { ok: false; code: number; message: string }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: Number(system.stack.env.BOUNCE_SMTP_PORT), secure: false, ignoreTLS: true });
  try {
    const info = await transport.sendMail({ envelope: { from: '', to }, raw });
    return { ok: true, response: info.response };
  } catch (error) {
    const failure = error as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: failure.responseCode ?? 0, message: failure.response ?? failure.message };
  } finally {
    transport.close();
  }
}

async function suppression(address: string): Promise<{ reason: string; message_id: number | null } | undefined> {
  const { rows } = await system.db.query<{ reason: string; message_id: number | null }>(
    'SELECT reason, message_id FROM suppressions WHERE project_id = $1 AND lower(address) = lower($2)',
    [tenant.projectId, address],
  );
  return rows[0];
}

/** The one signed webhook of `type` the integrator's endpoint received about message `id`. */
async function webhookReceived(type: string, id: number): Promise<Record<string, unknown>> {
  const [webhook] = await waitFor(async () => (webhooksAbout(receiver, type, id).length > 0 ? webhooksAbout(receiver, type, id) : undefined), {
    timeoutMs: 15_000,
    what: `${type} of ${id}`,
  });
  return webhook!.body.data;
}

/** Everything a report could have changed, to compare before and after a refused one. */
async function footprint(): Promise<unknown> {
  const { rows } = await system.db.query(
    `SELECT (SELECT count(*) FROM message_events)::int AS events, (SELECT count(*) FROM suppressions)::int AS suppressions,
            (SELECT count(*) FROM webhook_events)::int AS webhook_events,
            (SELECT string_agg(id || ':' || state, ',' ORDER BY id) FROM messages WHERE project_id = $1) AS states`,
    [tenant.projectId],
  );
  return rows[0];
}

test('every mail leaves with a signed VERP return path naming its message', async () => {
  const { id, returnPath } = await sentMessage('verp@example.com');
  assert.match(returnPath, new RegExp(`^bounces\\+[a-z2-7]{29}@${bounceDomain().replaceAll('.', '\\.')}$`));
  assert.equal(readReturnPath(dataKey(), returnPath, bounceDomain()), id);
});

test('a hard-bounce DSN at the return path moves sent → bounced, suppresses the address and emits message.bounced', async () => {
  const { id, returnPath } = await sentMessage('gone@example.com');
  const reply = await report(
    returnPath,
    dsn(returnPath, { action: 'failed', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 <gone@example.com>... User unknown' }),
  );
  assert.ok(reply.ok, JSON.stringify(reply));
  assert.equal(await stateOf(id), 'bounced', 'applied before the 250');

  assert.deepEqual(await suppression('gone@example.com'), { reason: 'hard_bounce', message_id: id });
  const bounced = await webhookReceived('message.bounced', id);
  assert.deepEqual([bounced.status, bounced.to], ['bounced', 'gone@example.com']);
  const read = await system.request(`/api/v1/messages/${id}/`, {
    method: 'GET',
    headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId) },
  });
  assert.equal(read.status, 200, read.text);
  assert.equal(read.body.status, 'bounced');
  const events = read.body.events as { status: string; reason: string | null }[];
  assert.equal(events.at(-1)?.status, 'bounced');
  assert.match(events.at(-1)?.reason ?? '', /5\.1\.1/);
  assert.equal((await system.send(tenant, validBody('welcome', { to: 'gone@example.com' }))).status, 422, 'the address is suppressed');

  // The same report again (an MTA retrying after a lost 250) changes nothing.
  const before = await footprint();
  assert.ok((await report(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.1' }))).ok);
  assert.deepEqual(await footprint(), before);
});

test('a soft bounce moves the message to bounced but suppresses nothing; a delayed DSN changes nothing', async () => {
  const delayed = await sentMessage('slow@example.com');
  assert.ok((await report(delayed.returnPath, dsn(delayed.returnPath, { action: 'delayed', status: '4.4.7' }))).ok);
  assert.equal(await stateOf(delayed.id), 'sent');

  const full = await sentMessage('full@example.com');
  assert.ok((await report(full.returnPath, dsn(full.returnPath, { action: 'failed', status: '5.2.2', diagnostic: 'smtp; 552 5.2.2 Mailbox full' }))).ok);
  assert.equal(await stateOf(full.id), 'bounced');
  assert.equal(await suppression('full@example.com'), undefined);
});

test('an ARF complaint at the feedback-loop address moves sent → complained, suppresses (complaint) and emits message.complained', async () => {
  const { id, returnPath } = await sentMessage('angry@example.com');
  const reply = await report(`fbl@${bounceDomain()}`, arf(returnPath));
  assert.ok(reply.ok, JSON.stringify(reply));
  assert.equal(await stateOf(id), 'complained');
  assert.deepEqual(await suppression('angry@example.com'), { reason: 'complaint', message_id: id });
  assert.equal((await webhookReceived('message.complained', id)).status, 'complained');
});

test('forged or foreign return paths, mail that is no report and a report about nothing of ours are refused and change nothing', async () => {
  const { id, returnPath } = await sentMessage('target@example.com');
  const before = await footprint();

  const forgedKey = parseDataKey(Buffer.alloc(32, 7).toString('base64'));
  const forged = returnPathFor(forgedKey, id, bounceDomain());
  const refusedForged = await report(forged, dsn(forged, { action: 'failed', status: '5.1.1' }));
  assert.deepEqual(refusedForged.ok ? refusedForged : [refusedForged.code, /5\.1\.1/.test(refusedForged.message)], [550, true]);

  const foreign = await report('someone@example.org', dsn(returnPath, { action: 'failed', status: '5.1.1' }));
  assert.equal(foreign.ok ? 250 : foreign.code, 550, 'mail for another domain is not ours to take');

  const notAReport = await report(returnPath, 'Subject: hello\r\nFrom: a@example.org\r\n\r\njust a reply\r\n');
  assert.equal(notAReport.ok ? 250 : Math.floor(notAReport.code / 100), 5, 'a plain reply to the return path is not a report');

  const noOriginal = await report(`fbl@${bounceDomain()}`, arf('someone@example.org'));
  assert.equal(noOriginal.ok ? 250 : Math.floor(noOriginal.code / 100), 5, 'a complaint about mail that is not ours');

  assert.deepEqual(await footprint(), before);
  assert.equal(await stateOf(id), 'sent');
});

test('the DSN a real MTA (Postfix) generates for a recipient refused after it accepted the mail moves the message to bounced', async () => {
  const postfix = await startPrivatePostfix({
    routes: { [bounceDomain()]: { host: '127.0.0.1', port: Number(system.stack.env.BOUNCE_SMTP_PORT) } },
    defaultRoute: { host: '127.0.0.1', port: system.sink.port },
  });
  try {
    await system.stack.restart('mailer-svc', 0, { SMTP_URL: `smtp://127.0.0.1:${postfix.port}` });
    const response = await system.send(tenant, validBody('welcome', { to: 'nobody@example.test' }));
    assert.equal(response.status, 202, response.text);
    const id = response.body.message_id as number;
    await waitFor(async () => ((await stateOf(id)) === 'bounced' ? true : undefined), {
      timeoutMs: 30_000,
      what: `message ${id} bounced by Postfix's DSN`,
    }).catch((error: Error) => {
      throw new Error(`${error.message}\nPostfix's log:\n${postfix.log()}`);
    });
    assert.deepEqual(await suppression('nobody@example.test'), { reason: 'hard_bounce', message_id: id });
    const { rows } = await system.db.query<{ state: string; reason: string }>('SELECT state, reason FROM message_events WHERE message_id = $1 ORDER BY id', [
      id,
    ]);
    assert.deepEqual(rows.map((row) => row.state).slice(-2), ['sent', 'bounced'], 'the relay took it, then the report came');
    assert.match(rows.at(-1)?.reason ?? '', /5\.1\.1/);
  } finally {
    await system.stack.restart('mailer-svc', 0, { SMTP_URL: `smtp://127.0.0.1:${system.sink.port}` });
    await postfix.stop();
  }
});
