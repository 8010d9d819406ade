// The web panel against the whole running system. Over plain HTTP: its security rules (cookies, CSRF, sign-in limits,
// headers, tenancy both ways, roles, sessions that end). In Debian's Chromium: what a person does (sign in, follow a
// message to `sent` without reloading, filter the list, be refused another organization's message, sign out), with a
// screenshot of every page saved in test/artifacts/.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openBrowser } from '../harness/browser.ts';
import { csrfTokenOf, PanelVisitor } from '../harness/panel-visitor.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
const secrets = mkdtempSync(join(tmpdir(), 'notify-panel-e2e-'));
const password = 'correct horse battery staple';
const users = {
  alphaOperator: 'ops@alpha.example',
  alphaViewer: 'viewer@alpha.example',
  alphaLocked: 'locked@alpha.example',
  alphaRaced: 'raced@alpha.example',
  betaViewer: 'viewer@beta.example',
};

// The SMTP sink greylists Ada's first delivery and holds her second until the browser test lets it through, so the
// message is still on its way when its page opens. reject@ is refused for good.
let releaseAda!: () => void;
const adaReleased = new Promise<void>((resolve) => (releaseAda = resolve));
let adaAttempts = 0;

before(async () => {
  system = await startSystem({
    serviceEnv: { gateway: { TRUSTED_PROXY_HOPS: '1', PANEL_SIGN_IN_ADDRESS_RATE: '8/min', PANEL_SIGN_IN_ACCOUNT_RATE: '3/min' } },
    async smtpReply({ to }) {
      if (to.startsWith('reject@')) return { code: 550, message: '5.1.1 no such mailbox' };
      if (to === 'ada@alpha.example') {
        adaAttempts += 1;
        if (adaAttempts === 1) return { code: 451, message: '4.7.1 greylisted, try again later' };
        await adaReleased;
      }
      return undefined;
    },
  });
  alpha = await system.createTenant('alpha');
  beta = await system.createTenant('beta');
  const schema = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } };
  await system.putTemplate(alpha.projectId, 'welcome', {
    subject: 'Welcome, {{ name }}!',
    html: '<h1>Hello {{ name }}</h1><p>Thanks for joining.</p>',
    text: 'Hello {{ name }}',
    schema,
  });
  await system.putTemplate(alpha.projectId, 'invoice', { subject: 'Invoice {{ number }}', text: 'Invoice {{ number }} for {{ name }}' });
  await system.putTemplate(beta.projectId, 'welcome');
  const passwordFile = join(secrets, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  for (const [email, organization, role] of [
    [users.alphaOperator, alpha.organizationId, 'operator'],
    [users.alphaViewer, alpha.organizationId, 'viewer'],
    [users.alphaLocked, alpha.organizationId, 'viewer'],
    [users.alphaRaced, alpha.organizationId, 'viewer'],
    [users.betaViewer, beta.organizationId, 'viewer'],
  ] as const) {
    const created = await system.notifyctl(
      'panel-user',
      'create',
      '--org',
      String(organization),
      '--email',
      email,
      '--role',
      role,
      '--password-file',
      passwordFile,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`${email}\\s+${role}`));
    assert.doesNotMatch(created.stdout + created.stderr, new RegExp(password));
  }
});

after(async () => {
  releaseAda?.();
  await system?.stop();
  rmSync(secrets, { recursive: true, force: true });
});

/** A visitor from its own address, so the per-address sign-in limit of one test never touches another's. */
let addressCounter = 0;
function visitor(headers: Record<string, string> = {}): PanelVisitor {
  addressCounter += 1;
  return new PanelVisitor(system.gatewayUrl, { 'x-forwarded-for': `198.51.100.${addressCounter}`, ...headers });
}

async function signedIn(email: string, headers: Record<string, string> = {}): Promise<PanelVisitor> {
  const session = visitor(headers);
  const response = await session.signIn(email, password);
  assert.equal(response.status, 303, response.text);
  return session;
}

async function send(tenant: Tenant, to: string, template = 'welcome', data: Record<string, unknown> = { name: 'Ada' }): Promise<number> {
  const response = await system.send(tenant, { template, to, channel: 'email', data }, { 'idempotency-key': crypto.randomUUID() });
  assert.equal(response.status, 202, response.text);
  return response.body.message_id as number;
}

/** The page's <main>, without the header that names the user and holds their session's token. */
function mainOf(html: string): string {
  return html.slice(html.indexOf('<main'), html.indexOf('</main>'));
}

async function stateOf(messageId: number): Promise<string | undefined> {
  const { rows } = await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [messageId]);
  return rows[0]?.state;
}

test("panel pages carry a strict CSP, refuse framing, and speak the visitor's language", async () => {
  const anonymous = visitor();
  const home = await anonymous.get('/panel/');
  assert.equal(home.status, 303);
  assert.equal(home.headers.get('location'), '/panel/sign-in?next=%2Fpanel%2F');

  const form = await anonymous.get('/panel/sign-in');
  assert.equal(form.status, 200);
  const policy = form.headers.get('content-security-policy') ?? '';
  for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"])
    assert.ok(policy.includes(directive), policy);
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);
  assert.equal(form.headers.get('x-frame-options'), 'DENY');
  assert.equal(form.headers.get('x-content-type-options'), 'nosniff');
  assert.match(form.text, /^<!doctype html>\n<html lang="en">/);
  assert.doesNotMatch(form.text, /<script>|style="/, 'no inline script or style');
  assert.match(form.text, /<label for="email">Email<\/label>/);

  const spanish = await signedIn(users.alphaViewer, { 'accept-language': 'es-ES,es;q=0.9,en;q=0.5' });
  const page = await spanish.get('/panel/');
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('content-language'), 'es');
  assert.match(page.text, /<html lang="es">/);
  assert.match(page.text, /Proyectos de alpha/);
});

test('the session cookie is HttpOnly and SameSite=Lax, and Secure when the visitor came over HTTPS', async () => {
  const plain = visitor();
  const overHttp = await plain.signIn(users.alphaViewer, password);
  assert.equal(overHttp.status, 303);
  assert.equal(overHttp.headers.get('location'), '/panel/');
  const httpCookie = overHttp.setCookies.find((line) => line.startsWith('notify_panel_session='));
  assert.match(httpCookie ?? '', /; path=\/panel; samesite=lax; httponly$/);

  const tls = visitor({ 'x-forwarded-proto': 'https' });
  const overHttps = await tls.signIn(users.alphaViewer, password);
  const httpsCookie = overHttps.setCookies.find((line) => line.startsWith('notify_panel_session='));
  assert.match(httpsCookie ?? '', /; path=\/panel; samesite=lax; secure; httponly$/);
  const signInCookie = (await tls.get('/panel/sign-in')).setCookies.find((line) => line.startsWith('notify_panel_sign_in='));
  assert.match(signInCookie ?? '', /; path=\/panel\/sign-in; .*samesite=strict; secure; httponly$/);
});

test('a form without its CSRF token, or posted from another site, is refused', async () => {
  const stranger = visitor();
  await stranger.get('/panel/sign-in');
  const forged = await stranger.post('/panel/sign-in', { _csrf: 'x'.repeat(43), email: users.alphaViewer, password });
  assert.equal(forged.status, 403);
  assert.ok(!stranger.cookies.has('notify_panel_session'));

  const crossSite = visitor();
  const form = await crossSite.get('/panel/sign-in');
  const refused = await crossSite.post(
    '/panel/sign-in',
    { _csrf: csrfTokenOf(form.text), email: users.alphaViewer, password },
    { 'sec-fetch-site': 'cross-site' },
  );
  assert.equal(refused.status, 403);

  const user = await signedIn(users.alphaViewer);
  assert.equal((await user.post('/panel/sign-out', {})).status, 403);
  assert.equal((await user.post('/panel/sign-out', { _csrf: 'y'.repeat(43) })).status, 403);
  assert.equal((await user.get('/panel/')).status, 200, 'still signed in');
});

test('sign-in attempts are limited per account and per address', async () => {
  for (let attempt = 1; attempt <= 3; attempt += 1) {
    const wrong = await visitor().signIn(users.alphaLocked, 'not the password at all');
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /The email or the password is not right\./);
  }
  const locked = await visitor().signIn(users.alphaLocked, password);
  assert.equal(locked.status, 429, 'the right password no longer helps once the account is locked');
  assert.ok(Number(locked.headers.get('retry-after')) >= 1);
  assert.match(locked.text, /Too many sign-in attempts\. Try again in \d+ seconds\./);

  const guesser = visitor();
  for (let attempt = 1; attempt <= 8; attempt += 1) assert.equal((await guesser.signIn(`nobody${attempt}@alpha.example`, password)).status, 401);
  assert.equal((await guesser.signIn(users.alphaViewer, password)).status, 429);
  assert.equal((await visitor().signIn(users.alphaViewer, password)).status, 303, 'another address is not affected');
});

test('30 concurrent wrong passwords for one account: no more than its limit (3) reach the password check', async () => {
  const attempts = await Promise.all(Array.from({ length: 30 }, () => visitor().signIn(users.alphaRaced, 'not the password either')));
  const statuses = attempts.map((attempt) => attempt.status);
  assert.equal(statuses.filter((status) => status === 401).length, 3, statuses.join(' '));
  assert.equal(statuses.filter((status) => status === 429).length, 27, statuses.join(' '));
});

test("an organization's projects and messages are not found for another organization's users, both ways", async () => {
  const alphaMessage = await send(alpha, 'someone@alpha.example');
  const betaMessage = await send(beta, 'someone@beta.example', 'welcome', { name: 'Bea' });
  const missing = await (await signedIn(users.alphaViewer)).get('/panel/projects/999999');
  assert.equal(missing.status, 404);

  for (const [email, own, other, otherMessage] of [
    [users.alphaViewer, alpha, beta, betaMessage],
    [users.betaViewer, beta, alpha, alphaMessage],
  ] as const) {
    const user = await signedIn(email);
    assert.equal((await user.get(`/panel/projects/${own.projectId}`)).status, 200);
    const projects = await user.get('/panel/');
    assert.ok(!projects.text.includes(`/panel/projects/${other.projectId}"`), 'the other project is not listed');
    for (const path of [
      `/panel/projects/${other.projectId}`,
      `/panel/projects/${other.projectId}/messages`,
      `/panel/projects/${other.projectId}/messages/${otherMessage}`,
      `/panel/projects/${other.projectId}/messages/${otherMessage}/status`,
      `/panel/projects/${other.projectId}/templates/welcome`,
      `/panel/projects/${other.projectId}/keys`,
      // Its own project with the other organization's message id.
      `/panel/projects/${own.projectId}/messages/${otherMessage}`,
    ]) {
      const response = await user.get(path);
      assert.equal(response.status, 404, `${email} ${path}`);
      if (!path.endsWith('/status')) assert.equal(mainOf(response.text), mainOf(missing.text), 'indistinguishable from a project that does not exist');
    }
  }
});

test('only an operator re-queues a failed message, once its recipient is off the suppression list; a viewer sees no button and is refused', async () => {
  const failed = await send(alpha, 'reject@alpha.example');
  await waitFor(async () => ((await stateOf(failed)) === 'failed' ? true : undefined), { timeoutMs: 20_000, what: 'the message to fail' });
  const path = `/panel/projects/${alpha.projectId}/messages/${failed}`;

  const viewer = await signedIn(users.alphaViewer);
  const seen = await viewer.get(path);
  assert.equal(seen.status, 200);
  assert.match(seen.text, /5\.1\.1 no such mailbox/);
  assert.doesNotMatch(seen.text, /Re-queue/);
  assert.equal((await viewer.post(`${path}/requeue`, { _csrf: csrfTokenOf(seen.text), back: 'message' })).status, 403);
  assert.equal(await stateOf(failed), 'failed');

  const operator = await signedIn(users.alphaOperator);
  const overview = await operator.get(`/panel/projects/${alpha.projectId}`);
  assert.match(overview.text, new RegExp(`action="${path}/requeue"`), 'the overview lists the failure with its button');
  // The 5.1.1 suppressed the address: the re-queue is refused, saying why, until the entry is removed.
  const refused = await operator.post(`${path}/requeue`, { _csrf: csrfTokenOf(overview.text), back: 'overview' });
  assert.equal(refused.headers.get('location'), `/panel/projects/${alpha.projectId}?requeue=recipient_suppressed&message=${failed}`);
  assert.match(
    (await operator.get(refused.headers.get('location') ?? '')).text,
    new RegExp(`Message ${failed} was not re-queued: its recipient is on the suppression list\\.`),
  );
  assert.equal(await stateOf(failed), 'failed');
  await system.notifyctlOk('suppression', 'remove', '--project', String(alpha.projectId), '--address', 'reject@alpha.example');
  const requeued = await operator.post(`${path}/requeue`, { _csrf: csrfTokenOf(overview.text), back: 'overview' });
  assert.equal(requeued.status, 303);
  assert.equal(requeued.headers.get('location'), `/panel/projects/${alpha.projectId}?requeue=done&message=${failed}`);
  assert.match((await operator.get(requeued.headers.get('location') ?? '')).text, new RegExp(`Message ${failed} was queued again\\.`));
  const { rows } = await system.db.query<{ count: number }>(`SELECT count(*)::int AS count FROM message_events WHERE message_id = $1 AND state = 'queued'`, [
    failed,
  ]);
  assert.equal(rows[0]?.count, 2, 'the re-queue is in the timeline');
});

test('signing out, disabling the user or changing the password ends a session', async () => {
  const leaving = await signedIn(users.alphaViewer);
  const cookie = leaving.cookies.get('notify_panel_session') ?? '';
  const page = await leaving.get('/panel/');
  assert.equal((await leaving.post('/panel/sign-out', { _csrf: csrfTokenOf(page.text) })).headers.get('location'), '/panel/sign-in?signedOut');
  const replay = visitor();
  replay.cookies.set('notify_panel_session', cookie);
  assert.equal((await replay.get('/panel/')).status, 303, 'the old cookie opens nothing');

  const passwordFile = join(secrets, 'password');
  const created = await system.notifyctl(
    'panel-user',
    'create',
    '--org',
    String(beta.organizationId),
    '--email',
    'temp@beta.example',
    '--role',
    'viewer',
    '--password-file',
    passwordFile,
  );
  assert.equal(created.code, 0, created.stderr);
  const id = /^\s*(\d+)\s/m.exec(created.stdout.split('\n')[1] ?? '')?.[1] ?? '';
  const first = await signedIn('temp@beta.example');
  writeFileSync(passwordFile, 'a completely new password\n');
  assert.equal((await system.notifyctl('panel-user', 'set-password', '--id', id, '--password-file', passwordFile)).code, 0);
  assert.equal((await first.get('/panel/')).status, 303, 'a new password ends the sessions opened with the old one');
  writeFileSync(passwordFile, `${password}\n`);
  const second = visitor();
  assert.equal((await second.signIn('temp@beta.example', 'a completely new password')).status, 303);
  assert.equal((await second.get('/panel/')).status, 200);
  assert.equal((await system.notifyctl('panel-user', 'disable', '--id', id)).code, 0);
  assert.equal((await second.get('/panel/')).status, 303, "a disabled user's session ends at the next request");
  assert.equal((await visitor().signIn('temp@beta.example', 'a completely new password')).status, 401, 'a disabled user cannot sign in');
});

test('in a browser: sign in, follow a message to sent without reloading, filter, be refused elsewhere, sign out', { timeout: 90_000 }, async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const sections = page.getByRole('navigation', { name: 'Project sections' });
  try {
    await page.goto(`${system.gatewayUrl}/panel/`);
    await page.getByLabel('Email').fill(users.alphaOperator);
    await page.getByLabel('Password').fill(password);
    await browser.screenshot('01-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects of alpha' }).waitFor();
    await browser.screenshot('02-projects');

    const invoice = await send(alpha, 'bob@alpha.example', 'invoice', { number: 'F-7', name: 'Bob' });
    const ada = await send(alpha, 'ada@alpha.example', 'welcome', { name: 'Ada' });
    await waitFor(async () => (adaAttempts >= 2 ? true : undefined), { timeoutMs: 20_000, what: "Ada's second delivery attempt" });

    await page.getByRole('link', { name: /alpha-project/ }).click();
    await sections.getByRole('link', { name: 'Messages', exact: true }).click();
    await page.getByRole('link', { name: String(ada), exact: true }).click();
    await page.getByRole('heading', { name: `Message ${ada}` }).waitFor();
    const state = page.locator('[data-field="state"] .state');
    assert.equal(await state.getAttribute('data-state'), 'sending');
    assert.match((await page.locator('.details').textContent()) ?? '', /Welcome, Ada!/);
    await browser.screenshot('03-message-sending');

    await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    releaseAda();
    await page.locator('[data-field="state"] .state-sent').waitFor({ timeout: 20_000 });
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, 'the page was not reloaded');
    const timeline = await page.locator('[data-field="timeline"] tr').allInnerTexts();
    assert.deepEqual(
      timeline.map((row) => row.split('\t')[0]),
      ['queued', 'sending', 'deferred', 'sending', 'sent'],
    );
    assert.match(timeline[2] ?? '', /451 4\.7\.1 greylisted/);
    assert.match(timeline[4] ?? '', /\b250\b/);
    // biome-ignore lint/performance/useDomNodeTextContent: the assertions read each label and value as laid out: innerText breaks between a <dt> and its <dd>, textContent runs them together.
    const details = await page.locator('.details').innerText();
    assert.match(details, /celery_task_id\s+[0-9a-f-]{36}/);
    assert.match(details, /Idempotency-Key\s+[0-9a-f-]{36}/);
    assert.match(details, /Template version\s+1/);
    await browser.screenshot('04-message-sent');

    await sections.getByRole('link', { name: 'Messages', exact: true }).click();
    await page.getByLabel('Template').selectOption('invoice');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/template=invoice/);
    const ids = await page.locator('table.messages tbody tr td:first-child').allInnerTexts();
    assert.deepEqual(ids, [String(invoice)]);
    await page.getByLabel('Template').selectOption('');
    await page.getByLabel('Recipient').fill('ADA@alpha.example');
    await page.getByLabel('State').selectOption('sent');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/recipient=ADA/);
    assert.deepEqual(await page.locator('table.messages tbody tr td:first-child').allInnerTexts(), [String(ada)]);
    await browser.screenshot('05-messages-filtered');

    await sections.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByRole('heading', { name: 'Last hour' }).waitFor();
    await browser.screenshot('06-overview');
    await sections.getByRole('link', { name: 'Templates', exact: true }).click();
    await page.getByRole('link', { name: 'welcome' }).click();
    await page.locator('.rendered-subject').waitFor();
    assert.equal(await page.locator('.rendered-subject').textContent(), 'Welcome, Name!');
    await browser.screenshot('07-template-preview');
    await sections.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('heading', { name: /API keys of/ }).waitFor();
    await browser.screenshot('08-keys');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    await page.getByLabel('Email').fill(users.betaViewer);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects of beta' }).waitFor();
    const refused = await page.goto(`${system.gatewayUrl}/panel/projects/${alpha.projectId}/messages/${ada}`);
    assert.equal(refused?.status(), 404);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await browser.screenshot('09-other-organization-not-found');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
  } finally {
    await browser.close();
  }
});
