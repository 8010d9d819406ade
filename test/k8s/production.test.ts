// `npm run test:k8s`: the chart with values-production.yaml on the local cluster (test/k8s/cluster.sh). The stores the
// values expect outside the release run in their own namespaces (test/k8s/production/stores.yaml); cert-manager's,
// KEDA's and the Prometheus operator's CRDs come from their projects' modules (test/k8s/crds.ts). Where this machine
// cannot run what the values rely on, the test overrides that value and says why (docs/operations.md, "A cluster on
// this machine").
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { installCrds } from './crds.ts';
import { clusterRoot, command, freshCluster, helm, imageTag, isService, json, kubectl, type Pod, release } from './kube.ts';
import { checkPrometheus } from './prometheus.ts';
import { Release, type Tenant, Traffic } from './release.ts';

const namespace = 'notify-production';
const production = ['-f', 'helm/notify/values-production.yaml', '--set', 'image.registry=localhost', '--set', `image.tag=${imageTag}`];
/** What this machine cannot give the values, each overridden with its reason. */
const overrides = [
  // One NATS server here, not the three-node cluster the values' stream replicas need.
  '--set',
  'config.natsStreamReplicas=1',
  // One Redis here, without Sentinel.
  '--set',
  'config.gateway.redisSentinels=null',
  // No OpenTelemetry collector here.
  '--set',
  'config.otlpEndpoint=',
  // cert-manager's controller is its own Go module (github.com/cert-manager/cert-manager/cmd/controller), which the
  // Go module proxy does not serve: the servers' certificate is the operator's own Secret (the chart's other way), and
  // the Issuers and Certificates are checked against cert-manager's CRDs in the first test.
  '--set',
  'grpcTls.certManager.enabled=false',
  // No load balancer here: bounce-svc's LoadBalancer Service would never get its address, and `helm install --wait`
  // waits for it.
  '--set',
  'bounce.service.type=ClusterIP',
];
const directory = join(clusterRoot, 'production');
/** The services that connect to NATS, each as its own user, and the name its password has in stores.yaml's nats.conf. */
const natsVariable: Record<string, string> = {
  gateway: 'GATEWAY',
  'auth-svc': 'AUTH',
  'dispatch-svc': 'DISPATCH',
  'mailer-svc': 'MAILER',
  'webhook-svc': 'WEBHOOK',
};
const natsUsers = Object.keys(natsVariable);

/** A key and a certificate signed by a CA made here (the CA too when `ca` is unset). */
async function certificate(name: string, subject: string, names: readonly string[], ca?: string): Promise<{ crt: string; key: string }> {
  const base = join(directory, name);
  const signing = ca ? ['-CA', join(directory, `${ca}.crt`), '-CAkey', join(directory, `${ca}.key`)] : ['-key', `${base}.key`];
  await command('openssl', ['genrsa', '-out', `${base}.key`, '2048']);
  if (ca) {
    await command('openssl', ['req', '-new', '-key', `${base}.key`, '-subj', subject, '-out', `${base}.csr`]);
    const extensions = `subjectAltName=${names.map((dns) => `DNS:${dns}`).join(',')}\nextendedKeyUsage=serverAuth`;
    await command('sh', ['-c', `printf '%s\\n' "$1" > "$2"`, 'sh', extensions, `${base}.ext`]);
    await command('openssl', [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      ...signing,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${base}.ext`,
      '-out',
      `${base}.crt`,
    ]);
  } else {
    await command('openssl', ['req', '-x509', '-new', ...signing, '-subj', subject, '-days', '2', '-out', `${base}.crt`]);
  }
  return { crt: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') };
}

const secret = async (name: string, literals: Record<string, string>, type = 'generic') =>
  kubectl(['-n', namespace, 'create', 'secret', type, name, ...Object.entries(literals).map(([key, value]) => `--from-literal=${key}=${value}`)]);

describe('values-production.yaml on a real cluster', { timeout: 60 * 60_000 }, () => {
  before(
    async () => {
      await freshCluster();
      await installCrds();
      await kubectl(['create', 'namespace', namespace]);
      await kubectl(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=restricted']);
      // Where the values put the dashboards.
      await kubectl(['create', 'namespace', 'monitoring']);
    },
    { timeout: 45 * 60_000 },
  );

  test("the API server accepts every object the production values render, against cert-manager's, KEDA's and the Prometheus operator's CRDs", async () => {
    const rendered = (await helm(['template', release, 'helm/notify', '-n', namespace, ...production])).stdout;
    const kinds = parseAllDocuments(rendered)
      .map((document) => document.toJS() as { kind?: string } | null)
      .flatMap((object) => (object?.kind ? [object.kind] : []));
    for (const kind of ['Issuer', 'Certificate', 'ScaledObject', 'ServiceMonitor', 'PrometheusRule', 'NetworkPolicy', 'Ingress']) {
      assert.ok(kinds.includes(kind), `the production values render no ${kind}`);
    }
    const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: rendered, check: false });
    assert.equal(applied.code, 0, applied.stderr);
  });

  let tenant: Tenant;
  let notify: Release;

  test('helm install with values-production.yaml, its Secrets made by the operator: every pod Ready, helm test passes', async () => {
    mkdirSync(directory, { recursive: true });
    const password = randomBytes(12).toString('hex');
    const stores = readFileSync('test/k8s/production/stores.yaml', 'utf8').replaceAll('IMAGE_TAG', imageTag).replaceAll('DATABASE_PASSWORD', password);
    await kubectl(['apply', '-f', '-'], { input: stores });
    // Each service's NATS user: its password in the server's Secret and in the release's (natsAuth.secretName).
    const natsPasswords = Object.fromEntries(natsUsers.map((component) => [component, `p${randomBytes(16).toString('hex')}`]));
    await kubectl([
      '-n',
      'messaging',
      'create',
      'secret',
      'generic',
      'nats-users',
      ...natsUsers.map((component) => `--from-literal=NATS_${natsVariable[component]}_PASSWORD=${natsPasswords[component]}`),
    ]);
    await secret('notify-nats', natsPasswords);
    for (const [where, name] of [
      ['db', 'postgres-rw'],
      ['cache', 'redis'],
      ['messaging', 'nats'],
      ['relay', 'mail-sink'],
    ]) {
      await kubectl(['-n', where ?? '', 'rollout', 'status', `deployment/${name}`, '--timeout=3m']);
    }
    const token = () => randomBytes(32).toString('hex');
    await secret('notify-connections', {
      DATABASE_URL: `postgres://notify:${password}@postgres-rw.db:5432/notify`,
      REDIS_URL: 'redis://redis.cache:6379',
      NATS_URL: 'nats://nats.messaging:4222',
      SMTP_URL: 'smtp://mail-sink.relay:465',
      GATEWAY_TOKEN: token(),
      MAILER_TOKEN: token(),
      BOUNCE_TOKEN: token(),
      ADMIN_TOKEN: token(),
      NOTIFY_DATA_KEY: randomBytes(32).toString('base64'),
    });
    // The servers' certificate for every name a client may dial, as grpc-tls.yaml would have cert-manager issue it.
    const ca = await certificate('grpc-ca', '/CN=notify-grpc-ca', []);
    const names = ['auth-svc', 'dispatch-svc'].flatMap((service) => {
      const name = `${release}-${service}`;
      return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
    });
    const server = await certificate('grpc-server', `/CN=${release}-grpc`, names, 'grpc-ca');
    await secret(`${release}-grpc-tls`, { 'tls.crt': server.crt, 'tls.key': server.key, 'ca.crt': ca.crt });
    // The MX's certificate for STARTTLS (bounce.tls.secretName).
    const mx = await certificate('bounce', '/CN=bounces.mail.example.com', ['bounces.mail.example.com'], 'grpc-ca');
    await secret('notify-bounce-tls', { 'tls.crt': mx.crt, 'tls.key': mx.key });

    await helm(['install', release, 'helm/notify', '-n', namespace, ...production, ...overrides, '--wait', '--timeout', '10m']);
    const pods = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods'])).items;
    const running = pods.filter(isService);
    assert.ok(running.length >= 6, `pods: ${pods.map((pod) => pod.metadata.name).join(', ')}`);
    for (const pod of running) {
      const ready = pod.status.conditions?.find((condition) => condition.type === 'Ready');
      assert.equal(ready?.status, 'True', `${pod.metadata.name} is not Ready: ${JSON.stringify(pod.status.conditions)}`);
    }

    notify = new Release({ name: release, namespace, secret: 'notify-connections', grpcCa: ca.crt });
    tenant = await notify.createTenant();
    await secret('notify-smoke-test', { 'api-key': tenant.apiKey, 'organization-id': tenant.organizationId, 'project-id': tenant.projectId });
    const result = await helm(['test', release, '-n', namespace, '--logs', '--timeout', '5m'], { check: false });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /Phase:\s+Succeeded/);
  });

  test("the seed's request through the gateway's Service is 202, the mail reaches the relay and the status reads sent", async () => {
    const traffic = new Traffic(await notify.serviceUrl('gateway', 'http'), tenant);
    for (let index = 0; index < 5; index++) await traffic.send(index);
    assert.deepEqual(traffic.unexpected, []);
    assert.deepEqual(await traffic.notSent(120_000), []);
    const relay = (await kubectl(['-n', 'relay', 'get', 'service', 'mail-sink', '-o', 'jsonpath={.spec.clusterIP}'])).stdout;
    const search = await fetch(`http://${relay}:8025/api/v1/search?query=${encodeURIComponent(`to:${traffic.run}`)}`);
    const found = (await search.json()) as { messages: { Subject: string }[] };
    assert.deepEqual(found.messages.map((message) => message.Subject).sort(), [0, 1, 2, 3, 4].map((index) => `Hello day2-${traffic.run}-${index}`).sort());
  });

  test('Prometheus scrapes every pod, and every alert rule evaluates without error on the live metrics', async () => {
    await checkPrometheus(namespace, [...production, ...overrides]);
  });

  test('the production values turn on what they promise: NetworkPolicies with egress, gRPC TLS, NATS users, autoscaling', async () => {
    const policies = (await json<{ items: { metadata: { name: string }; spec: { policyTypes?: string[] } }[] }>(['-n', namespace, 'get', 'networkpolicies']))
      .items;
    assert.ok(
      policies.some((policy) => policy.spec.policyTypes?.includes('Egress')),
      policies.map((policy) => policy.metadata.name).join(', '),
    );
    const hpas = (await json<{ items: { metadata: { name: string } }[] }>(['-n', namespace, 'get', 'hpa'])).items.map((hpa) => hpa.metadata.name);
    assert.ok(hpas.includes(`${release}-gateway`), hpas.join(', '));
    const scaled = (await json<{ items: { metadata: { name: string } }[] }>(['-n', namespace, 'get', 'scaledobjects'])).items.map(
      (object) => object.metadata.name,
    );
    assert.deepEqual(scaled, [`${release}-mailer-svc`]);
    const auth = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods', '-l', 'app.kubernetes.io/component=auth-svc'])).items[0];
    assert.ok(auth, 'an auth-svc pod');
    const env = (await kubectl(['-n', namespace, 'exec', auth.metadata.name, '--', 'printenv', 'GRPC_TLS_CERT_FILE'], { check: false })).stdout.trim();
    assert.match(env, /tls\.crt$/, 'auth-svc serves gRPC over TLS');
    const user = (await kubectl(['-n', namespace, 'exec', auth.metadata.name, '--', 'printenv', 'NATS_USER'], { check: false })).stdout.trim();
    assert.equal(user, 'auth-svc', 'auth-svc connects to NATS as its own user');
  });
});
