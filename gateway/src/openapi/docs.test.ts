import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { rawRequest, type ServedApp, serveApp } from '../testing/serve-app.ts';

// Nothing listens on port 1: the docs are served without auth-svc or dispatch-svc.
let gateway: ServedApp;

before(async () => {
  gateway = await serveApp({ authAddress: '127.0.0.1:1', dispatchAddress: '127.0.0.1:1' });
});

after(async () => {
  await gateway.close();
});

const packageFile = (name: string): Buffer => readFileSync(createRequire(import.meta.url).resolve(`swagger-ui-dist/${name}`));

async function page(): Promise<{ response: Response; html: string; assets: string[] }> {
  const response = await fetch(`${gateway.url}/docs`);
  const html = await response.text();
  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '').filter((url) => !url.startsWith('data:'));
  return { response, html, assets };
}

test('GET /docs is an HTML page loading Swagger UI from the gateway itself, pointed at the OpenAPI document', async () => {
  const { response, html, assets } = await page();
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(html, /data-openapi-url="\/api\/v1\/openapi\.json"/);
  assert.deepEqual(
    assets.map((url) => url.replace(/\?v=[0-9a-f]{12}$/, '')),
    ['/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/docs.js'],
  );
  assert.doesNotMatch(html, /<script>|<style|\sstyle=|\son\w+=/, 'nothing inline');
});

test('the page forbids other origins, inline code and framing', async () => {
  const { response } = await page();
  const policy = response.headers.get('content-security-policy') ?? '';
  const directives = new Map(
    policy
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .map(([name = '', ...values]) => [name, values]),
  );
  assert.deepEqual(directives.get('default-src'), ["'none'"]);
  assert.deepEqual(directives.get('script-src'), ["'self'"]);
  assert.deepEqual(directives.get('style-src'), ["'self'"]);
  assert.deepEqual(directives.get('connect-src'), ["'self'"]);
  assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
  assert.doesNotMatch(policy, /https?:|unsafe-inline|unsafe-eval|\*/);
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(response.headers.get('x-frame-options'), 'DENY');
  assert.equal(response.headers.get('cache-control'), 'no-store');
});

test('each asset is served with its type, cached for good under its versioned URL, revalidated under a bare one', async () => {
  const { assets } = await page();
  const expected: Record<string, { type: string; body: Buffer }> = {
    '/docs/swagger-ui.css': { type: 'text/css; charset=utf-8', body: packageFile('swagger-ui.css') },
    '/docs/swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', body: packageFile('swagger-ui-bundle.js') },
    '/docs/docs.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./static/docs.js', import.meta.url)) },
  };
  for (const url of assets) {
    const bare = url.replace(/\?.*$/, '');
    const want = expected[bare];
    assert.ok(want, url);
    const response = await rawRequest(gateway.port, { method: 'GET', path: url });
    assert.equal(response.status, 200, url);
    assert.equal(response.headers['content-type'], want.type, url);
    assert.equal(response.headers['cache-control'], 'public, max-age=31536000, immutable', url);
    assert.equal(response.headers['content-encoding'], undefined, 'identity unless gzip is accepted');
    assert.equal(response.body, want.body.toString('utf8'), url);
    const stale = await rawRequest(gateway.port, { method: 'GET', path: `${bare}?v=000000000000` });
    assert.equal(stale.headers['cache-control'], 'no-cache', `${bare} under another version`);
    assert.equal((await rawRequest(gateway.port, { method: 'GET', path: bare })).headers['cache-control'], 'no-cache', bare);
  }
});

test('an asset is sent gzip-encoded to a client that accepts it, and the response varies on Accept-Encoding', async () => {
  const { assets } = await page();
  const bundle = assets.find((url) => url.includes('swagger-ui-bundle.js')) ?? '';
  const response = await fetch(`${gateway.url}${bundle}`, { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(response.headers.get('content-encoding'), 'gzip');
  assert.match(response.headers.get('vary') ?? '', /Accept-Encoding/i);
  // fetch decodes it; the raw bytes are gzip and a fraction of the original.
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), packageFile('swagger-ui-bundle.js'));
  const raw = await new Promise<Buffer>((resolve, reject) => {
    get(`${gateway.url}${bundle}`, { headers: { 'accept-encoding': 'gzip' } }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming
        .on('data', (chunk: Buffer) => chunks.push(chunk))
        .on('end', () => resolve(Buffer.concat(chunks)))
        .on('error', reject);
    }).on('error', reject);
  });
  assert.ok(raw.length < packageFile('swagger-ui-bundle.js').length / 2, `${raw.length} bytes`);
  assert.deepEqual(gunzipSync(raw), packageFile('swagger-ui-bundle.js'));
});

test('/docs/ leads to /docs, and any other name under /docs/ is a 404', async () => {
  const slash = await fetch(`${gateway.url}/docs/`, { redirect: 'manual' });
  assert.equal(slash.status, 301);
  assert.equal(slash.headers.get('location'), '/docs');
  for (const name of ['index.html', 'swagger-initializer.js', 'swagger-ui-bundle.js.map', '..%2Fpackage.json', 'constructor', '__proto__']) {
    const response = await fetch(`${gateway.url}/docs/${name}`);
    assert.equal(response.status, 404, name);
    assert.deepEqual(await response.json(), { detail: 'Not found.', code: 'not_found' });
  }
});
