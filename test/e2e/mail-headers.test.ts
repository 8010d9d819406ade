// What a mail carries on its way out, against the running services: the envelope sender is the message's VERP return
// path (signed, naming the message), and a template marked for one-click unsubscribe gives its mails RFC 8058's
// List-Unsubscribe (the gateway's /u/TOKEN link and a mailto) and List-Unsubscribe-Post headers; other mails have none.
// The mail is read as received by the SMTP sink, with mailparser.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { SinkEnvelope } from '@notify/cli/local';
import { type DataKey, parseDataKey, readReturnPath, readUnsubscribeToken } from '@notify/platform/mail';
import { simpleParser } from 'mailparser';
import { assertAccepted } from '../harness/contract-shapes.ts';
import { mailFiles } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

let system: System;
let tenant: Tenant;
let dataKey: DataKey;
const envelopes: SinkEnvelope[] = [];

before(async () => {
  system = await startSystem({
    smtpReply: (envelope) => {
      envelopes.push(envelope);
      return undefined;
    },
  });
  dataKey = parseDataKey(system.stack.env.NOTIFY_DATA_KEY);
  tenant = await system.createTenant('mail-headers');
  await system.putTemplate(tenant.projectId, 'receipt');
  await system.templates.call('PutTemplate', {
    projectId: tenant.projectId,
    slug: 'newsletter',
    subject: 'News for {{ name }}',
    html: '<p>News, {{ name }}</p>',
    text: 'News, {{ name }}',
    variablesSchemaJson: '',
    active: true,
    unsubscribe: true,
  });
});

after(async () => {
  await system?.stop();
});

/** Sends one mail; answers its id, its raw bytes as stored and the envelope sender the sink was offered. */
async function sendAndReceive(template: string, to: string): Promise<{ messageId: number; raw: Buffer; mailFrom: string }> {
  const response = await system.send(tenant, validBody(template, { to }));
  assertAccepted(response);
  const messageId = Number(response.body.message_id);
  const raw = await waitFor(
    async () => {
      for (const name of mailFiles(system.resources.mailDir)) {
        const bytes = readFileSync(join(system.resources.mailDir, name));
        if ((await simpleParser(bytes)).headers.get('x-notify-message-id') === String(messageId)) return bytes;
      }
      return undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, what: `the mail of message ${messageId}` },
  );
  // Compared case-insensitively: what the relay is offered may be case-folded on the way.
  const envelope = envelopes.find((each) => each.to.toLowerCase() === to.toLowerCase());
  assert.ok(envelope, `the sink was offered ${to}`);
  return { messageId, raw, mailFrom: envelope.from };
}

/** A header's values as sent, unfolded (RFC 5322 2.2.3). */
function rawHeader(raw: Buffer, name: string): string[] {
  const head = (raw.toString('utf8').split('\r\n\r\n')[0] ?? '').replace(/\r\n([ \t])/g, '$1');
  return head
    .split('\r\n')
    .filter((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`))
    .map((line) => line.slice(name.length + 1).trim());
}

test('every mail goes out with its own signed VERP return path as envelope sender, the From header unchanged', async () => {
  const { messageId, raw, mailFrom } = await sendAndReceive('receipt', 'verp@example.com');
  const bounceDomain = system.stack.env.BOUNCE_DOMAIN;
  assert.match(mailFrom, new RegExp(`^bounces\\+[a-z2-7]+@${bounceDomain.replace(/\./g, '\\.')}$`));
  assert.equal(readReturnPath(dataKey, mailFrom, bounceDomain), messageId);
  const parsed = await simpleParser(raw);
  assert.doesNotMatch(parsed.from?.text ?? '', /bounces\+/);
  assert.deepEqual(rawHeader(raw, 'List-Unsubscribe'), [], 'a template not marked has no unsubscribe headers');
  assert.deepEqual(rawHeader(raw, 'List-Unsubscribe-Post'), []);
});

test('a template marked for unsubscribe gives its mails RFC 8058 headers with a token for the project and address', async () => {
  const to = 'Reader@Example.com';
  const { messageId, raw } = await sendAndReceive('newsletter', to);
  const [value, ...more] = rawHeader(raw, 'List-Unsubscribe');
  assert.equal(more.length, 0);
  const publicUrl = system.stack.env.GATEWAY_URL.replace(/\/+$/, '');
  const token = /\/u\/([A-Za-z0-9_-]+)>/.exec(value ?? '')?.[1];
  assert.ok(token, `List-Unsubscribe: ${value}`);
  assert.equal(value, `<${publicUrl}/u/${token}>, <mailto:unsubscribe@${system.stack.env.BOUNCE_DOMAIN}?subject=unsubscribe%20${token}>`);
  assert.deepEqual(readUnsubscribeToken(dataKey, token), { projectId: tenant.projectId, messageId, address: to });
  assert.deepEqual(rawHeader(raw, 'List-Unsubscribe-Post'), ['List-Unsubscribe=One-Click']);

  const parsed = await simpleParser(raw);
  const list = parsed.headers.get('list') as { unsubscribe?: { url?: string } } | undefined;
  assert.equal(list?.unsubscribe?.url, `${publicUrl}/u/${token}`);
});
