// The docs integrators read, against the running system. GET /docs: human-readable API docs served from an npm package
// (Swagger UI), no CDN. Over plain HTTP: the page loads only same-origin scripts and stylesheets, each served with its
// type, and the OpenAPI document it points at. In Debian's Chromium: the page renders the send and batch operations under its
// Content-Security-Policy, with no error and no request leaving the gateway's origin, and "Try it out" sends a real
// message (screenshot in test/artifacts/). docs/integrators.md: its retry recipes (curl, fetch) run as printed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { openBrowser } from '../../harness/browser.ts';
import { type System, startSystem, type Tenant } from '../../harness/system.ts';
import { anotherKey } from '../../harness/tenants.ts';

let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('docs');
  await system.putTemplate(tenant.projectId, 'welcome');
});

const scratch = mkdtempSync(join(tmpdir(), 'notify-docs-e2e-'));

after(async () => {
  await system?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** A TCP proxy that passes each request on to `target` and drops the answer: the client sees a server that never answers. */
async function answerlessProxy(target: URL): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream);
    upstream.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The URLs the page loads (src and href), resolved against it; `data:` URLs load nothing from anywhere. */
async function docsPage(): Promise<{ response: Response; html: string; loads: URL[] }> {
  const response = await fetch(`${system.gatewayUrl}/docs`);
  const html = await response.text();
  const loads = [...html.matchAll(/\s(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)]
    .map((match) => new URL(match[1] ?? '', response.url))
    .filter((url) => url.protocol !== 'data:');
  return { response, html, loads };
}

test('/docs is an HTML page whose scripts and stylesheets all come from the gateway, each served 200 with its type', async () => {
  const { response, html, loads } = await docsPage();
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/);
  const origin = new URL(system.gatewayUrl).origin;
  assert.ok(loads.length >= 3, `the page loads ${loads.length} files`);
  assert.ok(!/<script(?![^>]*\ssrc=)[^>]*>/i.test(html), 'no inline script');
  for (const url of loads) {
    assert.equal(url.origin, origin, `${url} is not same-origin`);
    const asset = await fetch(url);
    assert.equal(asset.status, 200, String(url));
    const type = asset.headers.get('content-type') ?? '';
    assert.match(type, url.pathname.endsWith('.css') ? /^text\/css\b/ : /^text\/javascript\b/, `${url}: ${type}`);
    assert.match(asset.headers.get('cache-control') ?? '', /immutable/, String(url));
    assert.ok((await asset.arrayBuffer()).byteLength > 0, String(url));
  }
  const policy = response.headers.get('content-security-policy') ?? '';
  assert.match(policy, /script-src 'self'(;|$)/);
  assert.doesNotMatch(policy, /https?:|\*|unsafe-/, 'no other origin, no inline code, no eval');
});

test('the OpenAPI document the page points at is served from the same origin', async () => {
  const { html } = await docsPage();
  const documentUrl = /data-openapi-url="([^"]+)"/.exec(html)?.[1];
  assert.equal(documentUrl, '/api/v1/openapi.json');
  const response = await fetch(new URL(documentUrl, system.gatewayUrl));
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
  assert.equal(document.openapi, '3.1.0');
  assert.ok(document.paths['/api/v1/send/']);
});

test('in a browser the docs render the send and batch operations without an error or a request to another origin, and "Try it out" sends', {
  timeout: 90_000,
}, async () => {
  const browser = await openBrowser();
  const problems: string[] = [];
  const origin = new URL(system.gatewayUrl).origin;
  try {
    const { page } = browser;
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.protocol !== 'data:' && url.origin !== origin) problems.push(`request to another origin: ${request.url()}`);
    });

    await page.goto(`${system.gatewayUrl}/docs`);
    // By its exact path: the batch operation's path starts with the send's.
    await page.locator('.opblock-summary-path[data-path="/api/v1/send/"]').waitFor();
    await page.locator('.opblock-summary-path[data-path="/api/v1/send/batch"]').waitFor();
    assert.equal(
      await page
        .locator('.info .title')
        .first()
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point: Swagger UI puts the version in a <pre> after the title, on a line of its own only once rendered.
        .innerText()
        .then((title) => title.split('\n')[0]?.trim()),
      'Notify',
    );

    // Authorize with the tenant's key as the scheme wants it, then send through the page.
    await page.locator('button.authorize').first().click();
    await page.locator('.modal-ux input[type="text"], .modal-ux input:not([type])').first().fill(`Api-Key ${tenant.apiKey}`);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.btn-done, .modal-ux .close-modal').first().click();
    await page.locator('.opblock-summary', { has: page.locator('[data-path="/api/v1/send/"]') }).click();
    await page.locator('button.try-out__btn').click();
    await page.locator('tr[data-param-name="X-Organization-ID"] input').fill(String(tenant.organizationId));
    await page
      .locator('textarea.body-param__text')
      .fill(JSON.stringify({ template: 'welcome', to: 'docs@example.com', channel: 'email', data: { name: 'Docs' } }));
    await page.locator('button.execute').click();
    const status = page.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor();
    await browser.screenshot('docs-try-it-out');
    const shown = (await status.textContent())?.trim();
    // biome-ignore lint/performance/useDomNodeTextContent: the failure message shows the response table as rendered, a row a line, not its cells' text run together.
    assert.equal(shown, '202', await page.locator('.live-responses-table').innerText());
  } finally {
    await browser.close();
  }
  assert.deepEqual(problems, []);
  const { rows } = await system.db.query<{ recipient: string }>("SELECT recipient FROM messages WHERE recipient = 'docs@example.com'");
  assert.equal(rows.length, 1, 'the message sent from the docs page exists');
});

/** The code block docs/integrators.md marks as `tested by test/e2e/default-system/contract-docs.suite.ts: <name>`. */
function recipe(name: string): string {
  const guide = readFileSync(new URL('../../../docs/integrators.md', import.meta.url), 'utf8');
  const block = new RegExp(`<!-- tested by test/e2e/default-system/contract-docs\\.suite\\.ts: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(
    guide,
  )?.[1];
  assert.ok(block, `docs/integrators.md has no ${name} block`);
  return block;
}

/** A key of the tenant's project allowed one send a second (its own rate, as an operator sets it), so that a burst meets 429s. */
async function keyAllowingOnePerSecond(name: string): Promise<Tenant> {
  const key = await anotherKey(system, tenant, name);
  await system.authAdmin.call('UpdateApiKey', { id: key.keyId, sendRate: '1/s' });
  return key;
}

/** The gateway's count of send answers with this status, from its metrics. */
async function answered(status: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.gateway}/metrics`)).text();
  const lines = text
    .split('\n')
    .filter((line) => line.startsWith('notify_http_requests_total{') && line.includes('route="/api/v1/send/"') && line.includes(`status="${status}"`));
  return lines.reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

async function messagesTo(recipient: string): Promise<number> {
  const { rows } = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages WHERE recipient = $1', [recipient]);
  return rows[0]?.count ?? 0;
}

test('the curl retry recipe sends, waits out a 429 with the same key, and gives up at once on a refusal', { timeout: 60_000 }, async () => {
  const script = join(scratch, 'send-with-retry.sh');
  writeFileSync(script, recipe('retry-curl'), { mode: 0o700 });
  const run = (key: Pick<Tenant, 'apiKey' | 'organizationId'>) =>
    new Promise<{ code: number; stdout: string; stderr: string; ms: number }>((resolve) => {
      const started = performance.now();
      execFile(
        'bash',
        [script],
        { env: { PATH: process.env.PATH ?? '', NOTIFY_URL: system.gatewayUrl, NOTIFY_API_KEY: key.apiKey, NOTIFY_ORG_ID: String(key.organizationId) } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr, ms: performance.now() - started }),
      );
    });

  const throttledBefore = await answered(429);
  const key = await keyAllowingOnePerSecond('docs-curl');
  const runs = await Promise.all([run(key), run(key)]);
  for (const result of runs) {
    assert.equal(result.code, 0, result.stderr);
    const accepted = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(accepted.status, 'queued');
    assert.equal(accepted.idempotent_replay, false);
  }
  assert.ok((await answered(429)) > throttledBefore, 'one run met the rate limit and retried');

  const refusedBefore = await answered(403);
  const refused = await run({ apiKey: tenant.apiKey, organizationId: tenant.organizationId + 1_000_000 });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /refused with 403, not retried/);
  assert.equal((await answered(403)) - refusedBefore, 1, 'a 403 is not retried');
});

test('the fetch retry recipe sends through 429s, replays a retried key, survives a timeout without a duplicate, and does not retry a 404', {
  timeout: 60_000,
}, async () => {
  const module = join(scratch, 'send-with-retry.mjs');
  writeFileSync(module, recipe('retry-fetch'));
  const { sendWithRetry } = (await import(pathToFileURL(module).href)) as {
    sendWithRetry: (message: object, options: Record<string, unknown>) => Promise<Record<string, unknown>>;
  };
  const key = await keyAllowingOnePerSecond('docs-fetch');
  const options = { baseUrl: system.gatewayUrl, apiKey: key.apiKey, organizationId: key.organizationId, baseMs: 100 };
  const message = (to: string) => ({ template: 'welcome', to, channel: 'email', data: { name: 'Fetch' } });

  const throttledBefore = await answered(429);
  const burst = await Promise.all([1, 2, 3].map((n) => sendWithRetry(message(`fetch-${n}@example.com`), options)));
  assert.deepEqual(
    burst.map((accepted) => [accepted.status, accepted.idempotent_replay]),
    [
      ['queued', false],
      ['queued', false],
      ['queued', false],
    ],
  );
  assert.ok((await answered(429)) > throttledBefore, 'the burst met the rate limit and retried');

  const idempotencyKey = randomUUID();
  const first = await sendWithRetry(message('fetch-replay@example.com'), { ...options, idempotencyKey });
  const again = await sendWithRetry(message('fetch-replay@example.com'), { ...options, idempotencyKey });
  assert.deepEqual([again.message_id, again.idempotent_replay], [first.message_id, true]);
  assert.equal(await messagesTo('fetch-replay@example.com'), 1);

  // Every attempt reaches the server but its answer never comes back: the recipe times out and gives up; the same key
  // later sends the message once.
  const timedOutKey = randomUUID();
  const silent = await answerlessProxy(new URL(system.gatewayUrl));
  try {
    await assert.rejects(
      sendWithRetry(message('fetch-timeout@example.com'), { ...options, baseUrl: silent.url, idempotencyKey: timedOutKey, timeoutMs: 300, maxAttempts: 2 }),
      { name: 'TimeoutError' },
    );
  } finally {
    await silent.close();
  }
  const late = await sendWithRetry(message('fetch-timeout@example.com'), { ...options, idempotencyKey: timedOutKey });
  assert.equal(late.status, 'queued');
  assert.equal(await messagesTo('fetch-timeout@example.com'), 1);

  const notFoundBefore = await answered(404);
  await assert.rejects(
    sendWithRetry({ ...message('fetch-404@example.com'), template: 'no-such-template' }, options),
    (error: { status?: number; body?: { code?: string } }) => {
      assert.equal(error.status, 404);
      assert.equal(error.body?.code, 'template_not_found');
      return true;
    },
  );
  assert.equal((await answered(404)) - notFoundBefore, 1, 'a 404 is not retried');
});
