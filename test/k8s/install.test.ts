// `npm run test:k8s`: the chart installed from nothing on a real single-node Kubernetes started on this machine
// (test/k8s/cluster.sh), with the images `npm run images` builds. Not part of `npm test`: the images and the cluster
// take minutes (docs/operations.md, "Trying the chart on a local cluster").
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import {
  type Deployment,
  devImages,
  freshCluster,
  helm,
  image,
  imageTag,
  isService,
  type Job,
  json,
  kubectl,
  namespace,
  type Pod,
  release,
  runPod,
  serviceImages,
  services,
  step,
} from './kube.ts';
import { checkPrometheus } from './prometheus.ts';
import { Release, type Tenant, Traffic, toolbox } from './release.ts';

const devValues = [
  '-f',
  'helm/notify/values-dev.yaml',
  '--set',
  'image.registry=localhost',
  '--set',
  `image.tag=${imageTag}`,
  ...Object.entries(devImages).flatMap(([value, name]) => ['--set', `dev.${value}.image=${image(`dev-${name}`)}`]),
  // The tests follow thousands of messages through the list, more than the chart's default 600 reads a minute.
  '--set',
  'config.gateway.readRate=100000/min',
];
const nextTag = `${imageTag}-next`;

const dev = new Release({ name: release, namespace });

describe('the chart on a real cluster', { timeout: 60 * 60_000 }, () => {
  before(freshCluster, { timeout: 45 * 60_000 });

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
    tenant = await dev.createTenant();
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
    const gateway = await dev.serviceUrl('gateway', 'http');
    const to = `k8s-${randomUUID().slice(0, 8)}@example.com`;
    const response = await fetch(`${gateway}/api/v1/send/`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId, 'content-type': 'application/json' },
      body: JSON.stringify({ template: 'welcome', to, channel: 'email', data: { name: 'cluster' } }),
    });
    const accepted = (await response.json()) as { message_id: number; status: string };
    assert.equal(response.status, 202, JSON.stringify(accepted));
    let state = '';
    for (let attempt = 0; attempt < 60 && state !== 'sent'; attempt++) {
      const status = await fetch(`${gateway}/api/v1/messages/${accepted.message_id}/`, {
        headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId },
      });
      state = ((await status.json()) as { status: string }).status;
      if (state !== 'sent') await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    assert.equal(state, 'sent');
    assert.deepEqual(await dev.sinkSubjects(to), ['Hello cluster']);
  });

  test('deleting the mailer pod and the dispatch-svc pod while sending loses no message and sends none twice', async () => {
    const traffic = new Traffic(await dev.serviceUrl('gateway', 'http'), tenant);
    const total = 40;
    for (let index = 0; index < total; index++) {
      if (index === 10) await kubectl(['-n', namespace, 'delete', 'pod', '-l', 'app.kubernetes.io/component=mailer-svc', '--wait=false']);
      if (index === 20) await kubectl(['-n', namespace, 'delete', 'pod', '-l', 'app.kubernetes.io/component=dispatch-svc', '--wait=false']);
      await traffic.send(index);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(traffic.unexpected, []);
    assert.deepEqual(await traffic.notSent(120_000), []);
    const subjects = (await dev.sinkSubjects(traffic.run)).sort();
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
    const host = (name: string) => dev.host(name);
    const member = dev.member;
    // The same pod with the labels the policies name is let through: the refusals below are the policies' doing.
    assert.equal(await reach('netpol-member-db', host('postgresql'), 5432, member), 'connected');
    assert.equal(await reach('netpol-client-grpc', host('auth-svc'), 50051, dev.grpcClient), 'connected');
    assert.match(await reach('netpol-stranger-db', host('postgresql'), 5432, {}), /^(ECONNREFUSED|timeout)$/);
    assert.match(await reach('netpol-member-grpc', host('auth-svc'), 50051, member), /^(ECONNREFUSED|timeout)$/);
    assert.match(await reach('netpol-member-dispatch', host('dispatch-svc'), 50052, member), /^(ECONNREFUSED|timeout)$/);
  });

  test('Prometheus scrapes every pod, and every alert rule evaluates without error on the live metrics', async () => {
    await checkPrometheus(namespace, devValues);
  });

  test('helm upgrade to a new image tag while sending rolls every Deployment: no 5xx but 503 with Retry-After, nothing lost', async (t) => {
    const nextImages = serviceImages.map((name) => `localhost/notify-${name}:${nextTag}`);
    for (const [index, name] of serviceImages.entries()) await step('buildah', ['tag', image(name), nextImages[index] ?? '']);
    await step('bash', ['test/k8s/cluster.sh', 'load', ...nextImages]);

    const traffic = new Traffic(await dev.serviceUrl('gateway', 'http'), tenant);
    const stop = { stopped: false };
    const senders = [traffic.keepSending(stop, 50), traffic.keepSending(stop, 50)];
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await helm(['upgrade', release, 'helm/notify', '-n', namespace, ...devValues, '--set', `image.tag=${nextTag}`, '--wait', '--timeout', '10m']);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    stop.stopped = true;
    await Promise.all(senders);

    const deployments = (await json<{ items: Deployment[] }>(['-n', namespace, 'get', 'deployments', '-l', 'app.kubernetes.io/part-of=notify'])).items;
    const ours = deployments.filter((deployment) => services.includes(deployment.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
    assert.equal(ours.length, services.length, deployments.map((deployment) => deployment.metadata.name).join(', '));
    for (const deployment of ours) {
      assert.match(deployment.spec.template.spec.containers[0]?.image ?? '', new RegExp(`:${nextTag}$`), deployment.metadata.name);
      assert.equal(deployment.status.updatedReplicas, deployment.status.replicas, `${deployment.metadata.name} rolled out`);
    }
    const running = (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods'])).items.filter((pod) => isService(pod) && pod.status.phase === 'Running');
    assert.deepEqual(
      running.filter((pod) => !pod.spec.containers?.every((container) => container.image.endsWith(`:${nextTag}`))).map((pod) => pod.metadata.name),
      [],
    );

    t.diagnostic(`${traffic.ids.length} sends accepted during the upgrade; ${traffic.unanswered} attempts got no answer and were retried`);
    assert.deepEqual(traffic.unexpected, []);
    assert.ok(traffic.ids.length >= 50, `only ${traffic.ids.length} sends were accepted during the upgrade`);
    assert.deepEqual(await traffic.notSent(180_000), []);
    const subjects = (await dev.sinkSubjects(traffic.run)).sort();
    assert.deepEqual(subjects, [...new Set(subjects)], 'no mail twice');
    assert.equal(subjects.length, traffic.ids.length);
  });

  test('the mailers scale out while a backlog waits: a HorizontalPodAutoscaler on CPU, from metrics-server', async (t) => {
    const autoscaled = ['--set', 'mailer.autoscaling.enabled=true', '--set', 'mailer.autoscaling.minReplicas=1', '--set', 'mailer.autoscaling.maxReplicas=3'];
    await helm(['upgrade', release, 'helm/notify', '-n', namespace, ...devValues, '--set', `image.tag=${nextTag}`, ...autoscaled, '--wait']);
    const mailers = async () =>
      (await json<{ items: Pod[] }>(['-n', namespace, 'get', 'pods', '-l', 'app.kubernetes.io/component=mailer-svc'])).items.filter((pod) =>
        pod.status.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True'),
      );
    assert.equal((await mailers()).length, 1);

    const traffic = new Traffic(await dev.serviceUrl('gateway', 'http'), tenant);
    const started = Date.now();
    while ((await mailers()).length < 2 && Date.now() - started < 5 * 60_000) await traffic.sendBatches(1_000);
    const scaledAfter = Date.now() - started;
    // Long enough for the new mailers to take jobs from the shared consumer.
    for (const until = Date.now() + 20_000; Date.now() < until; ) await traffic.sendBatches(500);
    const ready = await mailers();
    t.diagnostic(`${ready.length} mailers Ready ${Math.round(scaledAfter / 1_000)} s into the backlog; ${traffic.ids.length} messages sent`);
    assert.ok(ready.length >= 2, `the mailers did not scale out: ${JSON.stringify((await kubectl(['-n', namespace, 'describe', 'hpa'])).stdout)}`);
    assert.deepEqual(traffic.unexpected, []);
    assert.deepEqual(await traffic.notSent(10 * 60_000), []);
    for (const pod of ready) {
      const port = pod.spec.containers?.[0]?.ports?.find((candidate) => candidate.name === 'metrics')?.containerPort;
      const metrics = await (await fetch(`http://${pod.status.podIP}:${port}/metrics`)).text();
      const sent = [...metrics.matchAll(/^notify_deliveries_total\{[^}]*outcome="sent"[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
      assert.ok(sent > 0, `${pod.metadata.name} delivered nothing`);
    }
  });

  test('helm uninstall leaves only what docs/operations.md says it keeps', async () => {
    await helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', '5m']);
    const kinds = (await kubectl(['api-resources', '--verbs=list,delete', '--namespaced', '-o', 'name'])).stdout
      .split('\n')
      .filter((kind) => kind && !kind.startsWith('events'));
    let left: string[] = [];
    for (const started = Date.now(); Date.now() - started < 120_000; await new Promise((resolve) => setTimeout(resolve, 2_000))) {
      left = (await kubectl(['-n', namespace, 'get', kinds.join(','), '-o', 'name'])).stdout.split('\n').filter(Boolean).sort();
      if (!left.some((name) => name.startsWith('pod/') && !name.startsWith(`pod/${dev.component('smoke-test')}`))) break;
    }
    assert.deepEqual(left, [
      // The namespace's own, made by Kubernetes.
      'configmap/kube-root-ca.crt',
      // The last `helm test`'s hooks: helm deletes no hook at uninstall.
      `configmap/${dev.component('smoke-test')}`,
      `pod/${dev.component('smoke-test')}`,
      // The operator's Secret for `helm test`, not the chart's.
      'secret/notify-smoke-test',
      'serviceaccount/default',
    ]);
  });
});
