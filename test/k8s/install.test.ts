// `npm run test:k8s`: the chart installed from nothing on a real single-node Kubernetes started on this machine
// (test/k8s/cluster.sh), with the images `npm run images` builds. Not part of `npm test`: the images and the cluster
// take minutes (docs/operations.md, "Trying the chart on a local cluster").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { clusterRoot, command, devImages, helm, image, imageTag, json, kubectl, namespace, release, runPod, serviceImages, step } from './kube.ts';

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly lastTransitionTime: string;
}
interface Pod {
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec: {
    readonly containers?: readonly { readonly ports?: readonly { readonly name?: string; readonly containerPort: number }[] }[];
    readonly initContainers?: readonly { readonly name: string }[];
  };
  readonly status: { readonly phase: string; readonly podIP?: string; readonly conditions?: readonly Condition[] };
}
interface Job {
  readonly metadata: { readonly name: string };
  readonly status: { readonly succeeded?: number; readonly completionTime?: string };
}

const devValues = [
  '-f',
  'helm/notify/values-dev.yaml',
  '--set',
  'image.registry=localhost',
  '--set',
  `image.tag=${imageTag}`,
  ...Object.entries(devImages).flatMap(([value, name]) => ['--set', `dev.${value}.image=${image(`dev-${name}`)}`]),
];

const toolbox = image('toolbox');
/** The pods of Notify's own services, each with a metrics port. */
const services = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc'];
const isService = (pod: Pod): boolean => services.includes(pod.metadata.labels?.['app.kubernetes.io/component'] ?? '');
const grpcClient = { 'app.kubernetes.io/instance': release, 'notify.io/grpc-client': 'true' };
const component = (name: string) => `${release}-${name}`;

async function secretValue(key: string): Promise<string> {
  const { stdout } = await kubectl(['-n', namespace, 'get', 'secret', `${release}-secrets`, '-o', `jsonpath={.data.${key}}`]);
  return Buffer.from(stdout, 'base64').toString();
}

/**
 * notifyctl in the toolbox image, inside the release's network, as NOTES.txt tells an operator to run it; `files` are
 * written to /tmp first (from the pod's environment) for the options that read one. Returns its --json output.
 */
async function notifyctl(args: readonly string[], files: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const env: Record<string, string> = {
    AUTH_SVC_ADDR: `dns:///${component('auth-svc')}.${namespace}.svc.cluster.local:50051`,
    DISPATCH_SVC_ADDR: `dns:///${component('dispatch-svc')}.${namespace}.svc.cluster.local:50052`,
    ADMIN_TOKEN: await secretValue('ADMIN_TOKEN'),
  };
  const writes = Object.entries(files).map(([name, content], index) => {
    env[`FILE_${index}`] = content;
    return `printf '%s' "$FILE_${index}" > /tmp/${name} && `;
  });
  const script = `${writes.join('')}exec notifyctl "$@" --json`;
  const name = `notifyctl-${randomUUID().slice(0, 8)}`;
  const result = await runPod({ name, image: toolbox, args: ['sh', '-c', script, 'notifyctl', ...args], env, labels: grpcClient });
  assert.equal(result.code, 0, `notifyctl ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  // The pod's log holds stderr too (the key's "shown once" warning): the JSON document is the lines from a brace
  // at the start of one to the closing one at the start of another.
  const document = result.stdout.match(/^[{[][\s\S]*^[}\]]$/m)?.[0];
  assert.ok(document, `notifyctl ${args.join(' ')} printed no JSON: ${result.stdout}`);
  return JSON.parse(document) as Record<string, unknown>;
}

/** A GET from inside the release (a pod with its instance label), where the dev servers admit requests. */
async function fetchInside(url: string): Promise<string> {
  const script = `fetch(${JSON.stringify(url)}).then(async (r) => { if (!r.ok) throw new Error(String(r.status)); process.stdout.write(await r.text()); })`;
  const name = `fetch-${randomUUID().slice(0, 8)}`;
  const result = await runPod({ name, image: toolbox, args: ['node', '-e', script], labels: { 'app.kubernetes.io/instance': release } });
  assert.equal(result.code, 0, `GET ${url}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

async function serviceUrl(name: string, port: string): Promise<string> {
  const { stdout } = await kubectl([
    '-n',
    namespace,
    'get',
    'service',
    component(name),
    '-o',
    `jsonpath={.spec.clusterIP}:{.spec.ports[?(@.name=="${port}")].port}`,
  ]);
  return `http://${stdout}`;
}

interface Tenant {
  readonly organizationId: string;
  readonly projectId: string;
  readonly apiKey: string;
}

async function createTenant(): Promise<Tenant> {
  const plan = await notifyctl(['plan', 'create', '--name', 'smoke', '--monthly-quota', '0']);
  const org = await notifyctl(['org', 'create', '--name', 'smoke-test', '--plan', String(plan.id)]);
  const project = await notifyctl(['project', 'create', '--org', String(org.id), '--name', 'smoke-test']);
  const projectId = String(project.id);
  await notifyctl(
    [
      'template',
      'put',
      '--project',
      projectId,
      '--slug',
      'welcome',
      '--subject',
      'Hello {{ name }}',
      '--html-file',
      '/tmp/welcome.html',
      '--text-file',
      '/tmp/welcome.txt',
      '--activate',
    ],
    { 'welcome.html': '<p>Hello {{ name }}</p>', 'welcome.txt': 'Hello {{ name }}' },
  );
  const key = await notifyctl(['key', 'create', '--project', projectId, '--name', 'helm-test']);
  return { organizationId: String(org.id), projectId, apiKey: String(key.apiKey) };
}

describe('the chart on a real cluster', { timeout: 60 * 60_000 }, () => {
  before(
    async () => {
      await step('bash', ['cli/bin/images.sh']);
      await step('bash', ['test/k8s/cluster.sh', 'down']);
      await step('bash', ['test/k8s/cluster.sh', 'up']);
      const images = [...serviceImages, ...Object.values(devImages).map((name) => `dev-${name}`)].map(image);
      await step('bash', ['test/k8s/cluster.sh', 'load', ...images]);
    },
    { timeout: 45 * 60_000 },
  );

  test('helm install with values-dev.yaml: every pod Ready, the schema migrated before a service was', async () => {
    await kubectl(['create', 'namespace', namespace]);
    await kubectl(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=restricted']);
    await helm(['install', release, 'helm/notify', '-n', namespace, ...devValues, '--wait', '--timeout', '10m']);

    const pods = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods'])).items;
    const running = pods.filter((pod) => pod.status.phase !== 'Succeeded');
    assert.ok(running.length >= 10, `pods: ${pods.map((pod) => pod.metadata.name).join(', ')}`);
    for (const pod of running) {
      const ready = pod.status.conditions?.find((condition) => condition.type === 'Ready');
      assert.equal(ready?.status, 'True', `${pod.metadata.name} is not Ready: ${JSON.stringify(pod.status.conditions)}`);
    }
    const jobs = (await json<{ items: Job[] }>(['-n', namespace, 'get', 'jobs'])).items;
    const migration = jobs.find((job) => job.metadata.name.includes('migration'));
    assert.equal(migration?.status.succeeded, 1, `the migration Job: ${JSON.stringify(migration?.status)}`);
    const migrated = Date.parse(migration?.status.completionTime ?? '');
    const waiting = running.filter((pod) => pod.spec.initContainers?.some((container) => container.name === 'wait-for-schema'));
    assert.deepEqual(waiting.map((pod) => pod.metadata.labels?.['app.kubernetes.io/component']).sort(), [
      'auth-svc',
      'dispatch-svc',
      'webhook-svc',
      'webhook-svc',
    ]);
    for (const pod of waiting) {
      const ready = pod.status.conditions?.find((condition) => condition.type === 'Ready');
      assert.ok(Date.parse(ready?.lastTransitionTime ?? '') >= migrated, `${pod.metadata.name} was Ready before the migration ended`);
    }
  });

  let tenant: Tenant;

  test('helm test sends a real message through the gateway until the relay accepted it', async () => {
    tenant = await createTenant();
    await kubectl([
      '-n',
      namespace,
      'create',
      'secret',
      'generic',
      'notify-smoke-test',
      `--from-literal=api-key=${tenant.apiKey}`,
      `--from-literal=organization-id=${tenant.organizationId}`,
      `--from-literal=project-id=${tenant.projectId}`,
    ]);
    const result = await helm(['test', release, '-n', namespace, '--logs', '--timeout', '5m'], { check: false });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /Phase:\s+Succeeded/);
  });

  test("the seed's request through the gateway's Service is 202, the mail reaches the sink and the status reads sent", async () => {
    const gateway = await serviceUrl('gateway', 'http');
    const to = `k8s-${randomUUID().slice(0, 8)}@example.com`;
    const response = await fetch(`${gateway}/api/v1/send/`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId, 'content-type': 'application/json' },
      body: JSON.stringify({ template: 'welcome', to, channel: 'email', data: { name: 'cluster' } }),
    });
    const accepted = (await response.json()) as { message_id: number; status: string };
    assert.equal(response.status, 202, JSON.stringify(accepted));
    const sink = await serviceUrl('mail-sink', 'http');
    let state = '';
    for (let attempt = 0; attempt < 60 && state !== 'sent'; attempt++) {
      const status = await fetch(`${gateway}/api/v1/messages/${accepted.message_id}/`, {
        headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId },
      });
      state = ((await status.json()) as { status: string }).status;
      if (state !== 'sent') await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    assert.equal(state, 'sent');
    const messages = JSON.parse(await fetchInside(`${sink}/api/v1/search?query=${encodeURIComponent(`to:${to}`)}`)) as {
      messages: { Subject: string }[];
    };
    assert.deepEqual(
      messages.messages.map((message) => message.Subject),
      ['Hello cluster'],
    );
  });

  test('deleting the mailer pod and the dispatch-svc pod while sending loses no message and sends none twice', async () => {
    const gateway = await serviceUrl('gateway', 'http');
    const sink = await serviceUrl('mail-sink', 'http');
    const run = randomUUID().slice(0, 8);
    const headers = { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId, 'content-type': 'application/json' };
    /** One send, retried with its Idempotency-Key while dispatch-svc is away (503 with Retry-After, or no answer). */
    const send = async (index: number): Promise<number> => {
      const key = randomUUID();
      const name = `day2-${run}-${index}`;
      const body = JSON.stringify({ template: 'welcome', to: `${name}@example.com`, channel: 'email', data: { name } });
      for (let attempt = 0; attempt < 60; attempt++) {
        const response = await fetch(`${gateway}/api/v1/send/`, { method: 'POST', headers: { ...headers, 'idempotency-key': key }, body }).catch(
          () => undefined,
        );
        if (response?.status === 202) return ((await response.json()) as { message_id: number }).message_id;
        assert.ok(!response || response.status === 503, `send ${index}: ${response?.status} ${await response?.text()}`);
        if (response) assert.ok(response.headers.get('retry-after'), 'a 503 says when to retry');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      throw new Error(`send ${index} was not accepted within a minute`);
    };
    const total = 40;
    const ids: number[] = [];
    for (let index = 0; index < total; index++) {
      if (index === 10) await kubectl(['-n', namespace, 'delete', 'pod', '-l', 'app.kubernetes.io/component=mailer-svc', '--wait=false']);
      if (index === 20) await kubectl(['-n', namespace, 'delete', 'pod', '-l', 'app.kubernetes.io/component=dispatch-svc', '--wait=false']);
      ids.push(await send(index));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const states = new Map<number, string>();
    for (let attempt = 0; attempt < 120 && [...states.values()].filter((state) => state === 'sent').length < total; attempt++) {
      for (const id of ids.filter((id) => states.get(id) !== 'sent')) {
        const status = await fetch(`${gateway}/api/v1/messages/${id}/`, { headers }).catch(() => undefined);
        if (status?.ok) states.set(id, ((await status.json()) as { status: string }).status);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    assert.deepEqual(
      ids.filter((id) => states.get(id) !== 'sent').map((id) => [id, states.get(id)]),
      [],
    );
    const found = JSON.parse(await fetchInside(`${sink}/api/v1/search?query=${encodeURIComponent(`day2-${run}`)}&limit=500`)) as {
      messages: { Subject: string }[];
    };
    const subjects = found.messages.map((message) => message.Subject).sort();
    assert.deepEqual(subjects, [...new Set(subjects)], 'no mail twice');
    assert.equal(subjects.length, total);
  });

  test('the NetworkPolicies refuse a pod without the right labels: PostgreSQL to a stranger, gRPC to a non-client', async () => {
    const reach = async (name: string, host: string, port: number, labels: Record<string, string>): Promise<string> => {
      const script = `const s = require("node:net").connect(${port}, ${JSON.stringify(host)}); s.setTimeout(5000);
        s.on("connect", () => { console.log("connected"); s.destroy(); }); s.on("timeout", () => { console.log("timeout"); s.destroy(); });
        s.on("error", (e) => console.log(e.code));`;
      return (await runPod({ name, image: toolbox, args: ['node', '-e', script], labels })).stdout.trim();
    };
    const host = (name: string) => `${component(name)}.${namespace}.svc.cluster.local`;
    const member = { 'app.kubernetes.io/instance': release };
    // The same pod with the labels the policies name is let through: the refusals below are the policies' doing.
    assert.equal(await reach('netpol-member-db', host('postgresql'), 5432, member), 'connected');
    assert.equal(await reach('netpol-client-grpc', host('auth-svc'), 50051, grpcClient), 'connected');
    assert.match(await reach('netpol-stranger-db', host('postgresql'), 5432, {}), /^(ECONNREFUSED|timeout)$/);
    assert.match(await reach('netpol-member-grpc', host('auth-svc'), 50051, member), /^(ECONNREFUSED|timeout)$/);
    assert.match(await reach('netpol-member-dispatch', host('dispatch-svc'), 50052, member), /^(ECONNREFUSED|timeout)$/);
  });

  test('Prometheus scrapes every pod, and every alert rule evaluates without error on the live metrics', async () => {
    const prometheus = await startPrometheus();
    after(() => prometheus.kill());
    const pods = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods'])).items;
    const scraped = pods.filter((pod) => pod.status.phase === 'Running' && isService(pod));
    let targets: { labels: { pod: string }; health: string; lastError: string }[] = [];
    let rules: { name: string; health: string; lastError?: string; lastEvaluation: string }[] = [];
    for (let attempt = 0; attempt < 60; attempt++) {
      targets = (await prometheusApi<{ activeTargets: typeof targets }>('targets')).activeTargets;
      rules = (await prometheusApi<{ groups: { rules: typeof rules }[] }>('rules')).groups.flatMap((group) => group.rules);
      const evaluated = rules.length > 0 && rules.every((rule) => !rule.lastEvaluation.startsWith('0001'));
      if (targets.length >= scraped.length && targets.every((target) => target.health !== 'unknown') && evaluated) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    assert.deepEqual(
      targets.map((target) => [target.labels.pod, target.health, target.lastError]).sort(),
      scraped.map((pod) => [pod.metadata.name, 'up', '']).sort(),
    );
    assert.ok(rules.length >= 8, `rules: ${rules.map((rule) => rule.name).join(', ')}`);
    assert.deepEqual(
      rules.filter((rule) => rule.health !== 'ok').map((rule) => `${rule.name}: ${rule.lastError}`),
      [],
    );
  });
});

const prometheusPort = 19090;

async function prometheusApi<T>(path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/${path}`);
  return ((await response.json()) as { data: T }).data;
}

/**
 * Debian's Prometheus on the node (installed when missing), as an operator's would run: it finds the release's pods
 * through the API server and scrapes each port named `metrics`; its rules are the chart's PrometheusRule.
 */
async function startPrometheus(): Promise<{ kill(): void }> {
  if ((await command('sh', ['-c', 'command -v prometheus'], { check: false })).code !== 0) {
    await command('apt-get', ['install', '-y', '-q', 'prometheus'], { timeoutMs: 10 * 60_000 });
  }
  const rendered = await helm([
    'template',
    release,
    'helm/notify',
    '-n',
    namespace,
    ...devValues,
    '--set',
    'metrics.prometheusRule.enabled=true',
    '--show-only',
    'templates/prometheusrule.yaml',
  ]);
  const rule = parseAllDocuments(rendered.stdout)[0]?.toJS() as { spec: { groups: unknown[] } };
  const directory = join(clusterRoot, 'prometheus');
  mkdirSync(join(directory, 'data'), { recursive: true });
  writeFileSync(join(directory, 'rules.json'), JSON.stringify(rule.spec));
  // Debian builds Prometheus without Kubernetes service discovery: the targets are the pods' metrics ports, listed here.
  const pods = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods'])).items.filter((pod) => pod.status.phase === 'Running');
  const targets = pods.flatMap((pod) =>
    (pod.spec.containers ?? []).flatMap((container) =>
      (container.ports ?? [])
        .filter((port) => port.name === 'metrics')
        .map((port) => ({ targets: [`${pod.status.podIP}:${port.containerPort}`], labels: { pod: pod.metadata.name, namespace } })),
    ),
  );
  const config = {
    global: { scrape_interval: '2s', evaluation_interval: '2s' },
    rule_files: [join(directory, 'rules.json')],
    scrape_configs: [{ job_name: 'notify', static_configs: targets }],
  };
  writeFileSync(join(directory, 'prometheus.json'), JSON.stringify(config));
  const log = openSync(join(directory, 'prometheus.log'), 'w');
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(directory, 'prometheus.json')}`,
      `--storage.tsdb.path=${join(directory, 'data')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`,
    ],
    { stdio: ['ignore', log, log] },
  );
  for (let attempt = 0; attempt < 60; attempt++) {
    const ready = await fetch(`http://127.0.0.1:${prometheusPort}/-/ready`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return child;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  child.kill();
  throw new Error(`Prometheus did not become ready: ${readFileSync(join(directory, 'prometheus.log'), 'utf8').slice(-2_000)}`);
}
