// One-click unsubscribe (RFC 8058) against the running services: a template marked for it sends mail with
// List-Unsubscribe (an https link on the gateway and a mailto at the bounce domain) and List-Unsubscribe-Post; a POST
// of `List-Unsubscribe=One-Click` to the link, with no cookie, suppresses the address in the message's project as
// `unsubscribed` and emits `message.unsubscribed` once; the GET page only asks; the mailto does the same through
// bounce-svc; a token that does not verify changes nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import nodemailer from 'nodemailer';
import { notifyMessageId, readMails } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver, webhooksAbout } from '../harness/webhook-receiver.ts';

let system: System;
let tenant: Tenant;
let receiver: WebhookReceiver;

before(async () => {
  system = await startSystem({ env: { NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' } });
  tenant = await system.createTenant('unsubscribe');
  await system.putTemplate(tenant.projectId, 'digest', { unsubscribe: true });
  await system.putTemplate(tenant.projectId, 'welcome');
  receiver = await subscribedReceiver(system.db, tenant, ['message.unsubscribed']);
});

after(async () => {
  await receiver?.stop();
  await system?.stop();
});

async function mailTo(to: string, template = 'digest'): Promise<{ id: number; mail: ParsedMail }> {
  const response = await system.send(tenant, validBody(template, { to }));
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  const mail = await waitFor(async () => (await readMails(system.resources.mailDir)).find((each) => notifyMessageId(each) === id), {
    timeoutMs: 15_000,
    what: `the mail of message ${id}`,
  });
  return { id, mail };
}

/** A header's unfolded value as it came (mailparser merges the List-* headers into one structure of its own). */
function rawHeader(mail: ParsedMail, name: string): string | undefined {
  const line = mail.headerLines.find((each) => each.key === name)?.line;
  return line
    ?.slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
}

/** The two targets of List-Unsubscribe, read from the raw header as a mail client does. */
function unsubscribeTargets(mail: ParsedMail): { https: URL; mailto: URL } {
  const raw = rawHeader(mail, 'list-unsubscribe') ?? '';
  const targets = [...raw.matchAll(/<([^>]+)>/g)].map((match) => new URL(match[1]!));
  const https = targets.find((target) => target.protocol === 'http:' || target.protocol === 'https:');
  const mailto = targets.find((target) => target.protocol === 'mailto:');
  assert.ok(https && mailto, `List-Unsubscribe names an http(s) link and a mailto: ${raw}`);
  return { https, mailto };
}

async function suppression(address: string): Promise<{ reason: string; message_id: number | null } | undefined> {
  const { rows } = await system.db.query<{ reason: string; message_id: number | null }>(
    'SELECT reason, message_id FROM suppressions WHERE project_id = $1 AND address = $2',
    [tenant.projectId, address],
  );
  return rows[0];
}

/** Signed message.unsubscribed webhooks the integrator's endpoint received about message `id`, once the first came. */
async function unsubscribedEvents(id: number): Promise<number> {
  await waitFor(async () => (webhooksAbout(receiver, 'message.unsubscribed', id).length > 0 ? true : undefined), {
    timeoutMs: 15_000,
    what: `message.unsubscribed of ${id}`,
  });
  return webhooksAbout(receiver, 'message.unsubscribed', id).length;
}

const oneClick = (link: URL) =>
  fetch(link, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click', redirect: 'manual' });

test('a marked template mails the RFC 8058 headers; an unmarked one does not', async () => {
  const { mail } = await mailTo('headers@example.com');
  assert.equal(rawHeader(mail, 'list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
  const { https, mailto } = unsubscribeTargets(mail);
  assert.equal(https.origin, new URL(system.gatewayUrl).origin);
  assert.match(https.pathname, /^\/u\/[A-Za-z0-9_-]+$/);
  assert.equal(mailto.pathname, `unsubscribe@${system.stack.env.BOUNCE_DOMAIN}`);

  const plain = await mailTo('plain@example.com', 'welcome');
  assert.equal(rawHeader(plain.mail, 'list-unsubscribe'), undefined);
  assert.equal(rawHeader(plain.mail, 'list-unsubscribe-post'), undefined);
});

test('one click suppresses the address as unsubscribed, sets no cookie, is idempotent and emits message.unsubscribed once', async () => {
  const { id, mail } = await mailTo('reader@example.com');
  const { https } = unsubscribeTargets(mail);

  const page = await fetch(https, { headers: { 'accept-language': 'es' } });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<form[^>]+method="post"/i);
  assert.equal(await suppression('reader@example.com'), undefined, 'opening the link only asks');

  const first = await oneClick(https);
  assert.equal(first.status, 200, await first.text());
  assert.equal(first.headers.get('set-cookie'), null);
  assert.deepEqual(await suppression('reader@example.com'), { reason: 'unsubscribed', message_id: id });
  assert.equal(await unsubscribedEvents(id), 1);

  const again = await oneClick(https);
  assert.equal(again.status, 200);
  const { rows } = await system.db.query<{ count: number }>(
    "SELECT count(*)::int AS count FROM webhook_events WHERE message_id = $1 AND type = 'message.unsubscribed'",
    [id],
  );
  assert.equal(rows[0]?.count, 1, 'the second click records no second event');
  assert.equal((await system.send(tenant, validBody('digest', { to: 'reader@example.com' }))).status, 422);
});

test('a token that does not verify is 404 and changes nothing', async () => {
  const { mail } = await mailTo('other@example.com');
  const { https } = unsubscribeTargets(mail);
  const token = https.pathname.slice('/u/'.length);
  const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
  const response = await oneClick(new URL(`/u/${altered}`, https));
  assert.equal(response.status, 404);
  assert.equal(await suppression('other@example.com'), undefined);
});

test('the mailto target unsubscribes through bounce-svc', async () => {
  const { id, mail } = await mailTo('mailer@example.com');
  const { mailto } = unsubscribeTargets(mail);
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: Number(system.stack.env.BOUNCE_SMTP_PORT), secure: false, ignoreTLS: true });
  try {
    await transport.sendMail({ from: 'mailer@example.com', to: mailto.pathname, subject: mailto.searchParams.get('subject') ?? '', text: '' });
  } finally {
    transport.close();
  }
  assert.deepEqual(await suppression('mailer@example.com'), { reason: 'unsubscribed', message_id: id });
  assert.equal(await unsubscribedEvents(id), 1);
});
