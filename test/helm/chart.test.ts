// helm/notify without a cluster: lint, render with the dev and production-like values, validate every object against
// the Kubernetes API offline, and assert the properties operators rely on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import {
  type Container,
  chartDir,
  devValues,
  everythingOn,
  type K8sObject,
  lint,
  podSpec,
  productionValues,
  type Rendered,
  render,
  template,
  workloadKinds,
} from './chart.ts';
import { ensureHelm, ensureKubeStrict, repoRoot } from './tools.ts';
import { validateStrictly, validateWithModels } from './validate.ts';

const external = [
  'secrets.databaseUrl=postgres://notify:pw@db.example:5432/notify',
  'secrets.redisUrl=redis://redis.example:6379',
  'secrets.natsUrl=nats://nats.example:4222',
  'secrets.smtpUrl=smtp://relay.example:587',
];
const notifyContainers = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc'];

let helm = '';
let kubeStrict = '';
let skip: string | undefined;
let dev: Rendered;
let production: Rendered;
let externalUrls: Rendered;

before(async () => {
  const [helmTool, strictTool] = await Promise.all([ensureHelm(), ensureKubeStrict()]);
  if ('skip' in helmTool) {
    skip = helmTool.skip;
    return;
  }
  if ('skip' in strictTool) {
    skip = strictTool.skip;
    return;
  }
  helm = helmTool.path;
  kubeStrict = strictTool.path;
  [dev, production, externalUrls] = await Promise.all([
    render(helm, { valuesFiles: [devValues], set: everythingOn }),
    render(helm, { valuesFiles: [productionValues] }),
    render(helm, { set: [...external, 'httpRoute.enabled=true', 'httpRoute.parentRefs[0].name=public', 'httpRoute.hostnames[0]=notify.example.com'] }),
  ]);
});

/** An object's spec, failing the test with the object's kind and name when it has none. */
function specOf(object: K8sObject): Record<string, unknown> {
  assert.ok(object.spec, `${object.kind}/${object.metadata.name} has no spec`);
  return object.spec;
}

function containersOf(object: K8sObject): Container[] {
  const spec = podSpec(object);
  return [...spec.containers, ...(spec.initContainers ?? [])];
}

function env(container: Container, name: string): { value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } } | undefined {
  return container.env?.find((variable) => variable.name === name);
}

/** The labels of a workload's pods. */
function podSpecLabels(workload: K8sObject): Record<string, string> {
  return (workload.spec?.template as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels ?? {};
}

function deployment(rendered: Rendered, component: string): K8sObject {
  return rendered.get('Deployment', `notify-${component}`);
}

function container(rendered: Rendered, component: string): Container {
  const found = podSpec(deployment(rendered, component)).containers.find((candidate) => candidate.name === component);
  assert.ok(found, `no ${component} container`);
  return found;
}

describe('helm/notify', () => {
  test('helm lint --strict passes with the dev and the production-like values', { timeout: 60_000 }, async (t) => {
    if (skip) return t.skip(skip);
    for (const values of [devValues, productionValues]) {
      const result = await lint(helm, { valuesFiles: [values] });
      assert.equal(result.code, 0, `${values}:\n${result.stdout}${result.stderr}`);
    }
  });

  test('the default values refuse to render until the external services are named, naming each one', async (t) => {
    if (skip) return t.skip(skip);
    const result = await template(helm);
    assert.notEqual(result.code, 0);
    for (const setting of ['secrets.databaseUrl', 'secrets.redisUrl', 'secrets.natsUrl', 'secrets.smtpUrl', 'secrets.existingSecret', 'dev.enabled=true']) {
      assert.match(result.stderr, new RegExp(setting.replace('.', '\\.')));
    }
    const withUrls = await template(helm, { set: external });
    assert.equal(withUrls.code, 0, withUrls.stderr);
  });

  test('every rendered object decodes strictly into the Kubernetes API types and passes the API and CRD schemas', { timeout: 60_000 }, async (t) => {
    if (skip) return t.skip(skip);
    for (const [name, rendered] of [
      ['dev', dev],
      ['production', production],
      ['external URLs + HTTPRoute', externalUrls],
    ] as const) {
      const strict = await validateStrictly(kubeStrict, rendered.manifest);
      assert.deepEqual(strict.problems, [], `${name}: strict decoding`);
      assert.ok(strict.checked > 10, `${name}: only ${strict.checked} objects checked`);
      // Only CRDs are beyond the built-in scheme, and the models cover exactly those.
      for (const kind of strict.skippedKinds)
        assert.ok(['ScaledObject', 'ServiceMonitor', 'PrometheusRule', 'HTTPRoute', 'Issuer', 'Certificate'].includes(kind), `${name}: ${kind} not validated`);
      assert.deepEqual(await validateWithModels(rendered.objects), [], `${name}: schemas`);
    }
    assert.ok(
      dev.ofKind('ScaledObject').length &&
        production.ofKind('PrometheusRule').length &&
        externalUrls.ofKind('HTTPRoute').length &&
        production.ofKind('Certificate').length,
    );
  });

  test('a misspelt field is caught by strict decoding, a missing required one by the schemas', async (t) => {
    if (skip) return t.skip(skip);
    const misspelt = await validateStrictly(kubeStrict, production.manifest.replace('readOnlyRootFilesystem: true', 'readOnlyRootFilesytem: true'));
    assert.match(misspelt.problems.join('\n'), /unknown field .*readOnlyRootFilesytem/);
    const monitor = structuredClone(production.get('ServiceMonitor', 'notify'));
    delete (monitor.spec as Record<string, unknown>).selector;
    assert.match((await validateWithModels([monitor])).join('\n'), /selector/);
  });

  test('every container runs as a non-root user with a read-only root filesystem, no capabilities and no service account token', (t) => {
    if (skip) return t.skip(skip);
    for (const rendered of [dev, production]) {
      const workloads = rendered.objects.filter((object) => workloadKinds.has(object.kind));
      assert.ok(workloads.length >= 6);
      for (const workload of workloads) {
        const spec = podSpec(workload);
        const where = `${workload.kind}/${workload.metadata.name}`;
        assert.equal(spec.securityContext?.runAsNonRoot, true, where);
        assert.deepEqual(spec.securityContext?.seccompProfile, { type: 'RuntimeDefault' }, where);
        assert.equal(spec.automountServiceAccountToken, false, where);
        for (const c of containersOf(workload)) {
          const context = c.securityContext ?? {};
          assert.equal(context.runAsNonRoot, true, `${where} ${c.name}`);
          assert.equal(context.allowPrivilegeEscalation, false, `${where} ${c.name}`);
          assert.equal(context.readOnlyRootFilesystem, true, `${where} ${c.name}`);
          assert.deepEqual((context.capabilities as { drop?: string[] } | undefined)?.drop, ['ALL'], `${where} ${c.name}`);
          assert.deepEqual(context.seccompProfile, { type: 'RuntimeDefault' }, `${where} ${c.name}`);
          assert.ok(c.resources?.requests && c.resources.limits?.memory, `${where} ${c.name}: resources`);
        }
      }
      // Notify's own containers write only to an emptyDir at /tmp.
      for (const component of notifyContainers) {
        const spec = podSpec(deployment(rendered, component));
        assert.ok(
          spec.volumes?.some((volume) => volume.name === 'tmp' && volume.emptyDir),
          component,
        );
        assert.ok(
          container(rendered, component).volumeMounts?.some((mount) => mount.name === 'tmp' && mount.mountPath === '/tmp'),
          component,
        );
      }
    }
  });

  test('gateway, mailers, webhook senders and bounce-svc are probed over HTTP on the ops port, auth-svc and dispatch-svc with native gRPC probes while they serve plaintext', (t) => {
    if (skip) return t.skip(skip);
    for (const component of ['gateway', 'mailer-svc', 'webhook-svc', 'bounce-svc']) {
      const c = container(production, component);
      assert.deepEqual(c.readinessProbe?.httpGet, { path: '/readyz', port: 'metrics' }, component);
      assert.deepEqual(c.livenessProbe?.httpGet, { path: '/healthz', port: 'metrics' }, component);
      assert.ok(c.startupProbe?.httpGet, component);
    }
    for (const [component, port] of [
      ['auth-svc', 50051],
      ['dispatch-svc', 50052],
    ] as const) {
      const c = container(externalUrls, component);
      for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) assert.deepEqual(probe?.grpc, { port }, component);
      assert.equal(env(c, 'GRPC_PORT')?.value, String(port));
    }
  });

  test('auth-svc and dispatch-svc sit behind headless Services the gateway balances over with dns:/// targets', (t) => {
    if (skip) return t.skip(skip);
    const gateway = container(production, 'gateway');
    for (const [component, variable, port] of [
      ['auth-svc', 'AUTH_SVC_ADDR', 50051],
      ['dispatch-svc', 'DISPATCH_SVC_ADDR', 50052],
    ] as const) {
      const service = production.get('Service', `notify-${component}`);
      assert.equal(service.spec?.clusterIP, 'None', component);
      assert.equal(env(gateway, variable)?.value, `dns:///notify-${component}.notify.svc.cluster.local:${port}`);
      assert.ok((specOf(service).ports as { name: string; port: number }[]).some((p) => p.name === 'grpc' && p.port === port));
    }
    assert.notEqual(production.get('Service', 'notify-gateway').spec?.clusterIP, 'None');
  });

  test("the gateway reaches NATS for key invalidations and has its own AUTH_CACHE_TTL beside auth-svc's", async (t) => {
    if (skip) return t.skip(skip);
    const gateway = container(production, 'gateway');
    assert.equal(env(gateway, 'NATS_URL_FILE')?.value, '/var/run/secrets/notify/nats-url');
    assert.equal(production.get('ConfigMap', 'notify').data?.NOTIFY_NATS_PREFIX, '', 'the same subject prefix as auth-svc');
    assert.equal(production.get('ConfigMap', 'notify').data?.AUTH_CACHE_TTL, undefined, 'not shared: one name, two settings');
    assert.equal(env(gateway, 'AUTH_CACHE_TTL')?.value, '10s');
    assert.equal(env(container(production, 'auth-svc'), 'AUTH_CACHE_TTL')?.value, '10s');
    const tuned = await render(helm, { valuesFiles: [productionValues], set: ['config.gateway.authCacheTtl=0s', 'config.authSvc.cacheTtl=30s'] });
    assert.equal(env(container(tuned, 'gateway'), 'AUTH_CACHE_TTL')?.value, '0s');
    assert.equal(env(container(tuned, 'auth-svc'), 'AUTH_CACHE_TTL')?.value, '30s');
    const badTtl = await template(helm, { valuesFiles: [devValues], set: ['config.gateway.authCacheTtl=soon'] });
    assert.match(badTtl.stderr, /authCacheTtl/);
    // The dev NATS admits the gateway's pods (every pod of the release).
    const gatewayLabels = podSpecLabels(deployment(dev, 'gateway'));
    const natsFrom =
      (
        specOf(dev.get('NetworkPolicy', 'notify-nats')).ingress as {
          ports: { port: number }[];
          from: { podSelector: { matchLabels: Record<string, string> } }[];
        }[]
      ).find((rule) => rule.ports[0]?.port === 4222)?.from ?? [];
    assert.ok(
      natsFrom.some((peer) => Object.entries(peer.podSelector.matchLabels).every(([label, value]) => gatewayLabels[label] === value)),
      `the gateway may connect to NATS: ${JSON.stringify(natsFrom)}`,
    );
  });

  test('dispatch-svc requires https webhook URLs unless config.dispatchSvc.webhookAllowPrivate is true', async (t) => {
    if (skip) return t.skip(skip);
    assert.equal(production.get('ConfigMap', 'notify').data?.NOTIFY_WEBHOOK_ALLOW_PRIVATE, 'false');
    assert.ok(container(production, 'dispatch-svc').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    const allowed = await render(helm, { valuesFiles: [devValues], set: ['config.dispatchSvc.webhookAllowPrivate=true'] });
    assert.equal(allowed.get('ConfigMap', 'notify').data?.NOTIFY_WEBHOOK_ALLOW_PRIVATE, 'true');
    const wrong = await template(helm, { valuesFiles: [devValues], set: ['config.dispatchSvc.webhookAllowPrivate=yes'] });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /webhookAllowPrivate/);
  });

  test('config.otlpProtocol goes with config.otlpEndpoint (OTEL_EXPORTER_OTLP_PROTOCOL), http/protobuf by default; an unknown one is refused', async (t) => {
    if (skip) return t.skip(skip);
    assert.equal(dev.get('ConfigMap', 'notify').data?.OTEL_EXPORTER_OTLP_PROTOCOL, undefined, 'nothing without an endpoint');
    const grpc = await render(helm, { valuesFiles: [devValues], set: ['config.otlpEndpoint=http://collector.observability:4317', 'config.otlpProtocol=grpc'] });
    assert.equal(grpc.get('ConfigMap', 'notify').data?.OTEL_EXPORTER_OTLP_PROTOCOL, 'grpc');
    const byDefault = await render(helm, { valuesFiles: [devValues], set: ['config.otlpEndpoint=http://collector.observability:4318'] });
    assert.equal(byDefault.get('ConfigMap', 'notify').data?.OTEL_EXPORTER_OTLP_PROTOCOL, 'http/protobuf');
    const wrong = await template(helm, { valuesFiles: [devValues], set: ['config.otlpEndpoint=http://collector:4318', 'config.otlpProtocol=thrift'] });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /otlpProtocol/);
  });

  test('config.gateway.keepAliveTimeout reaches the gateway (HTTP_KEEP_ALIVE_TIMEOUT), 75s by default; a non-duration is refused', async (t) => {
    if (skip) return t.skip(skip);
    assert.equal(production.get('ConfigMap', 'notify').data?.HTTP_KEEP_ALIVE_TIMEOUT, '75s');
    assert.ok(container(production, 'gateway').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    const longer = await render(helm, { valuesFiles: [devValues], set: ['config.gateway.keepAliveTimeout=350s'] });
    assert.equal(longer.get('ConfigMap', 'notify').data?.HTTP_KEEP_ALIVE_TIMEOUT, '350s');
    const wrong = await template(helm, { valuesFiles: [devValues], set: ['config.gateway.keepAliveTimeout=forever'] });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /keepAliveTimeout/);
  });

  test("the domain verifier's resolver and pace reach dispatch-svc; a resolver that is not addresses is refused", async (t) => {
    if (skip) return t.skip(skip);
    const data = production.get('ConfigMap', 'notify').data ?? {};
    assert.deepEqual([data.DNS_RESOLVER, data.DOMAIN_VERIFY_INTERVAL], ['', '1s']);
    const set = await render(helm, {
      valuesFiles: [devValues],
      set: ['config.dispatchSvc.dnsResolver=10.0.0.2:53', 'config.dispatchSvc.domainVerifyInterval=5s'],
    });
    assert.deepEqual([set.get('ConfigMap', 'notify').data?.DNS_RESOLVER, set.get('ConfigMap', 'notify').data?.DOMAIN_VERIFY_INTERVAL], ['10.0.0.2:53', '5s']);
    const wrong = await template(helm, { valuesFiles: [devValues], set: ['config.dispatchSvc.dnsResolver=dns.example.com'] });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /dnsResolver/);
  });

  test("config.messageRetention and the purge's settings reach dispatch-svc; a retention not in days or hours is refused", async (t) => {
    if (skip) return t.skip(skip);
    const data = production.get('ConfigMap', 'notify').data ?? {};
    assert.deepEqual(
      ['NOTIFY_MESSAGE_RETENTION', 'RETENTION_PURGE_INTERVAL', 'RETENTION_PURGE_BATCH_SIZE', 'RETENTION_PURGE_PAUSE'].map((name) => data[name]),
      ['30d', '10m', '1000', '100ms'],
    );
    assert.ok(container(production, 'dispatch-svc').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    const kept = await render(helm, { valuesFiles: [devValues], set: ['config.messageRetention=90d', 'config.dispatchSvc.retentionPurgeBatchSize=500'] });
    assert.deepEqual(
      [kept.get('ConfigMap', 'notify').data?.NOTIFY_MESSAGE_RETENTION, kept.get('ConfigMap', 'notify').data?.RETENTION_PURGE_BATCH_SIZE],
      ['90d', '500'],
    );
    for (const wrong of ['config.messageRetention=30', 'config.messageRetention=2w', 'config.dispatchSvc.retentionPurgeBatchSize=0']) {
      const result = await template(helm, { valuesFiles: [devValues], set: [wrong] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /messageRetention|retentionPurgeBatchSize/, wrong);
    }
  });

  test('config.gateway.redisSentinels and redisSentinelName reach the gateway as REDIS_SENTINELS and REDIS_SENTINEL_NAME; a malformed address is refused', async (t) => {
    if (skip) return t.skip(skip);
    const data = (rendered: Rendered) => rendered.get('ConfigMap', 'notify').data ?? {};
    assert.deepEqual(
      [data(externalUrls).REDIS_SENTINELS, data(externalUrls).REDIS_SENTINEL_NAME],
      ['', 'mymaster'],
      'off by default: REDIS_URL names the Redis',
    );
    // The production-like values follow Bitnami's redis chart with sentinels (docs/operations.md, "The stores in production").
    assert.deepEqual(
      [data(production).REDIS_SENTINELS, data(production).REDIS_SENTINEL_NAME],
      [[0, 1, 2].map((node) => `redis-node-${node}.redis-headless.cache:26379`).join(','), 'mymaster'],
    );
    assert.ok(container(production, 'gateway').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    const sentinels = ['redis-sentinel-0.cache:26379', 'redis-sentinel-1.cache:26379', '10.0.0.7:26379'];
    const sentinel = await render(helm, {
      valuesFiles: [productionValues],
      set: [
        ...sentinels.map((address, index) => `config.gateway.redisSentinels[${index}]=${address}`),
        'config.gateway.redisSentinelName=notify',
        'networkPolicy.egress.redis.ports={6379,26379}',
      ],
    });
    assert.deepEqual([data(sentinel).REDIS_SENTINELS, data(sentinel).REDIS_SENTINEL_NAME], [sentinels.join(','), 'notify']);
    assert.ok(JSON.stringify(sentinel.ofKind('NetworkPolicy')).includes('"port":26379'), 'the pods may reach the sentinels');
    // The master's password stays in the Secret's REDIS_URL, read from its file.
    assert.equal(env(container(sentinel, 'gateway'), 'REDIS_URL_FILE')?.value, '/var/run/secrets/notify/redis-url');
    for (const wrong of [
      'config.gateway.redisSentinels[0]=redis-sentinel-0.cache',
      'config.gateway.redisSentinels[0]=redis://sentinel:26379',
      'config.gateway.redisSentinelName=two words',
    ]) {
      const result = await template(helm, { valuesFiles: [productionValues], set: [wrong] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /redisSentinel/, wrong);
    }
  });

  test('config.traceUrlTemplate reaches the gateway as written, and one that is no http(s) URL with {trace_id} is refused', async (t) => {
    if (skip) return t.skip(skip);
    const grafana = 'https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"{trace_id}"}]}';
    assert.equal(production.get('ConfigMap', 'notify').data?.NOTIFY_TRACE_URL_TEMPLATE, grafana);
    assert.ok(container(production, 'gateway').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    assert.equal(dev.get('ConfigMap', 'notify').data?.NOTIFY_TRACE_URL_TEMPLATE, undefined, 'unset by default: the panel shows trace ids as text');
    for (const wrong of ['http://jaeger:16686/search', 'javascript:alert(1)//{trace_id}']) {
      const result = await template(helm, { valuesFiles: [devValues], set: [`config.traceUrlTemplate=${wrong}`] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /traceUrlTemplate/, wrong);
    }
  });

  test('config.mailer.destinationLimits reaches the mailers as MAILER_DESTINATION_LIMITS, beside the defaults; a malformed limit is refused', async (t) => {
    if (skip) return t.skip(skip);
    const data = (rendered: Rendered) => rendered.get('ConfigMap', 'notify').data ?? {};
    assert.deepEqual(
      [data(production).MAILER_DESTINATION_CONCURRENCY, data(production).MAILER_DESTINATION_RATE, data(production).MAILER_DESTINATION_LIMITS],
      ['20', '10000/s', ''],
    );
    assert.ok(container(production, 'mailer-svc').envFrom?.some((source) => source.configMapRef?.name === 'notify'));
    // The give-up policy is the services' own (4 days, attempts only a backstop), not a chart's shorter one.
    assert.deepEqual([data(production).MAILER_MAX_AGE, data(production).MAILER_MAX_ATTEMPTS], ['4d', '200']);
    const limited = await render(helm, {
      valuesFiles: [productionValues],
      set: [
        'config.mailer.destinationLimits.slow\\.example.concurrency=2',
        'config.mailer.destinationLimits.slow\\.example.rate=5/s',
        'config.mailer.destinationLimits.bulk\\.example.concurrency=50',
        'config.mailer.destinationLimits.bulk\\.example.rate=600/min',
      ],
    });
    // In the order of the domains, as the mailer's MAILER_DESTINATION_LIMITS syntax writes them.
    assert.equal(data(limited).MAILER_DESTINATION_LIMITS, 'bulk.example=50:600/min,slow.example=2:5/s');
    for (const wrong of [
      ['config.mailer.destinationLimits.slow\\.example.concurrency=0', 'config.mailer.destinationLimits.slow\\.example.rate=5/s'],
      ['config.mailer.destinationLimits.slow\\.example.concurrency=2', 'config.mailer.destinationLimits.slow\\.example.rate=fast'],
      ['config.mailer.destinationLimits.slow\\.example.concurrency=2'],
      ['config.mailer.destinationLimits.Slow_Example.concurrency=2', 'config.mailer.destinationLimits.Slow_Example.rate=5/s'],
      ['config.mailer.destinationRate=1000'],
    ]) {
      const result = await template(helm, { valuesFiles: [productionValues], set: wrong });
      assert.notEqual(result.code, 0, wrong.join(' '));
      // A domain that is not one is named as the property at fault.
      assert.match(result.stderr, /destination(Limits|Rate)|Slow_Example/, wrong.join(' '));
    }
  });

  test('the gateway counts failed keys at NOTIFY_AUTH_FAILURE_RATE, trusts as many proxies as the chart puts in front of it, and treats requests as https behind its TLS edge', async (t) => {
    if (skip) return t.skip(skip);
    const data = (rendered: Rendered) => rendered.get('ConfigMap', 'notify').data ?? {};
    const bare = await render(helm, { valuesFiles: [devValues] });
    assert.equal(data(bare).NOTIFY_AUTH_FAILURE_RATE, '20/min');
    assert.equal(data(bare).TRUSTED_PROXY_HOPS, '0', 'nothing in front: the TCP peer is the client');
    assert.equal(data(production).TRUSTED_PROXY_HOPS, '1', 'the production values enable the Ingress');
    const ingress = await render(helm, { valuesFiles: [devValues], set: ['ingress.enabled=true'] });
    assert.equal(data(ingress).TRUSTED_PROXY_HOPS, '1', 'the ingress controller appends the client address');
    const route = await render(helm, { valuesFiles: [devValues], set: ['httpRoute.enabled=true', 'httpRoute.parentRefs[0].name=edge'] });
    assert.equal(data(route).TRUSTED_PROXY_HOPS, '1', 'so does the Gateway API proxy');
    // HTTPS at the chart's own edge: the panel cookies are Secure, and the proxy's X-Forwarded-Proto (trusted above)
    // brings Strict-Transport-Security; without TLS there, neither.
    assert.equal(data(production).PANEL_COOKIE_SECURE, 'true', 'the production Ingress terminates TLS');
    assert.equal(data(route).PANEL_COOKIE_SECURE, 'true', 'a Gateway listener terminates TLS');
    assert.equal(data(ingress).PANEL_COOKIE_SECURE, 'false', 'an Ingress without a TLS section serves plain http');
    assert.equal(data(bare).PANEL_COOKIE_SECURE, 'false', 'port-forwarding over plain http');
    const cdn = await render(helm, {
      valuesFiles: [devValues],
      set: ['ingress.enabled=true', 'config.gateway.trustedProxyHops=2', 'config.gateway.authFailureRate=50/hour'],
    });
    assert.deepEqual([data(cdn).TRUSTED_PROXY_HOPS, data(cdn).NOTIFY_AUTH_FAILURE_RATE], ['2', '50/hour'], 'a CDN in front of the ingress: set by hand');
    for (const wrong of ['config.gateway.trustedProxyHops=-1', 'config.gateway.trustedProxyHops=11', 'config.gateway.authFailureRate=many']) {
      const result = await template(helm, { valuesFiles: [devValues], set: [wrong] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /trustedProxyHops|authFailureRate/, wrong);
    }
  });

  test("with existingSecret every secret comes from the operator's Secret, as files where the services read files", async (t) => {
    if (skip) return t.skip(skip);
    assert.deepEqual(production.ofKind('Secret'), [], 'the chart writes no Secret of its own');
    const referenced = new Set<string>();
    for (const workload of production.objects.filter((object) => workloadKinds.has(object.kind))) {
      for (const c of containersOf(workload))
        for (const variable of c.env ?? []) if (variable.valueFrom?.secretKeyRef) referenced.add(variable.valueFrom.secretKeyRef.name);
      for (const volume of podSpec(workload).volumes ?? []) if (volume.secret) referenced.add(volume.secret.secretName);
    }
    referenced.delete('notify-smoke-test'); // the helm test's own key, provided by the operator too
    referenced.delete('notify-bounce-tls'); // bounce-svc's STARTTLS certificate (bounce.tls.secretName), e.g. cert-manager's
    referenced.delete('notify-grpc-tls'); // the services' gRPC certificate, written by the chart's cert-manager Certificate
    referenced.delete('notify-nats'); // each service's NATS password (natsAuth.secretName), the operator's too
    assert.deepEqual([...referenced], ['notify-connections']);

    const auth = container(production, 'auth-svc');
    assert.equal(env(auth, 'DATABASE_URL_FILE')?.value, '/var/run/secrets/notify/database-url');
    assert.equal(env(auth, 'ADMIN_TOKEN_FILE')?.value, '/var/run/secrets/notify/admin-token');
    assert.equal(env(auth, 'NATS_URL_FILE')?.value, '/var/run/secrets/notify/nats-url');
    assert.equal(env(auth, 'DATABASE_URL'), undefined);
    assert.equal(env(auth, 'NATS_URL'), undefined);
    const volume = podSpec(deployment(production, 'auth-svc')).volumes?.find((candidate) => candidate.name === 'secrets');
    assert.deepEqual(volume?.secret?.items?.map((item) => item.path).sort(), ['admin-token', 'database-url', 'gateway-token', 'nats-url']);

    // Custom key names and environment variables instead of files.
    const custom = await render(helm, { valuesFiles: [productionValues], set: ['secrets.keys.databaseUrl=PG_URL', 'secrets.mountAsFiles=false'] });
    assert.deepEqual(env(container(custom, 'dispatch-svc'), 'DATABASE_URL')?.valueFrom?.secretKeyRef, { name: 'notify-connections', key: 'PG_URL' });
    assert.deepEqual(env(podSpec(custom.get('Job', 'notify-migration')).containers[0] as Container, 'DATABASE_URL')?.valueFrom?.secretKeyRef, {
      name: 'notify-connections',
      key: 'PG_URL',
    });
    assert.equal(env(container(custom, 'mailer-svc'), 'SMTP_URL_FILE'), undefined);
    assert.deepEqual(env(container(custom, 'gateway'), 'REDIS_URL')?.valueFrom?.secretKeyRef, { name: 'notify-connections', key: 'REDIS_URL' });
    assert.deepEqual(env(container(custom, 'mailer-svc'), 'NATS_URL')?.valueFrom?.secretKeyRef, { name: 'notify-connections', key: 'NATS_URL' });
  });

  test('the connection URLs, which may carry passwords, reach every service as files from the Secret', (t) => {
    if (skip) return t.skip(skip);
    const files: Record<string, Record<string, string>> = {
      // Each caller mounts only its own token; the servers mount every token they accept.
      gateway: { REDIS_URL: 'redis-url', NATS_URL: 'nats-url', GATEWAY_TOKEN: 'gateway-token' },
      'auth-svc': { DATABASE_URL: 'database-url', NATS_URL: 'nats-url', GATEWAY_TOKEN: 'gateway-token', ADMIN_TOKEN: 'admin-token' },
      'dispatch-svc': {
        DATABASE_URL: 'database-url',
        NATS_URL: 'nats-url',
        GATEWAY_TOKEN: 'gateway-token',
        MAILER_TOKEN: 'mailer-token',
        BOUNCE_TOKEN: 'bounce-token',
        ADMIN_TOKEN: 'admin-token',
        NOTIFY_DATA_KEY: 'data-key',
      },
      'mailer-svc': { NATS_URL: 'nats-url', SMTP_URL: 'smtp-url', MAILER_TOKEN: 'mailer-token', NOTIFY_DATA_KEY: 'data-key' },
      'webhook-svc': { DATABASE_URL: 'database-url', NATS_URL: 'nats-url', NOTIFY_DATA_KEY: 'data-key' },
      'bounce-svc': { BOUNCE_TOKEN: 'bounce-token', NOTIFY_DATA_KEY: 'data-key' },
    };
    for (const [rendered, secretName] of [
      [production, 'notify-connections'],
      [externalUrls, 'notify-secrets'],
    ] as const) {
      for (const [component, expected] of Object.entries(files)) {
        const c = container(rendered, component);
        const mount = c.volumeMounts?.find((candidate) => candidate.name === 'secrets');
        assert.equal(mount?.mountPath, '/var/run/secrets/notify', component);
        const volume = podSpec(deployment(rendered, component)).volumes?.find((candidate) => candidate.name === 'secrets');
        assert.equal(volume?.secret?.secretName, secretName, component);
        // The Secret's keys are named after the variables (secrets.keys), each mounted under its file name.
        assert.deepEqual(Object.fromEntries((volume?.secret?.items ?? []).map((item) => [item.key, item.path])), expected, component);
        for (const [variable, file] of Object.entries(expected)) {
          assert.equal(env(c, `${variable}_FILE`)?.value, `/var/run/secrets/notify/${file}`, `${component} ${variable}_FILE`);
          assert.equal(env(c, variable), undefined, `${component} reads ${variable} from its file only`);
        }
      }
    }
  });

  test('without existingSecret the chart writes the URLs it is given and generates tokens of 48 characters', (t) => {
    if (skip) return t.skip(skip);
    const secret = externalUrls.get('Secret', 'notify-secrets');
    const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]));
    assert.equal(decoded.DATABASE_URL, 'postgres://notify:pw@db.example:5432/notify');
    assert.equal(decoded.SMTP_URL, 'smtp://relay.example:587');
    const tokens = ['GATEWAY_TOKEN', 'MAILER_TOKEN', 'BOUNCE_TOKEN', 'ADMIN_TOKEN'].map((key) => decoded[key] ?? '');
    for (const token of tokens) assert.match(token, /^[A-Za-z0-9]{48}$/);
    assert.equal(new Set(tokens).size, 4, 'one token per caller');
  });

  test('KEDA on the consumer lag and an HPA on the mailers are mutually exclusive', async (t) => {
    if (skip) return t.skip(skip);
    const both = await template(helm, { valuesFiles: [devValues], set: ['mailer.keda.enabled=true', 'mailer.autoscaling.enabled=true'] });
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /mailer\.keda\.enabled and mailer\.autoscaling\.enabled are mutually exclusive/);

    const scaled = production.get('ScaledObject', 'notify-mailer-svc');
    const trigger = (specOf(scaled).triggers as { type: string; metadata: Record<string, string> }[])[0];
    assert.equal(trigger?.type, 'nats-jetstream');
    assert.deepEqual([trigger?.metadata.stream, trigger?.metadata.consumer], ['NOTIFY_JOBS', 'mailer']);
    assert.equal(trigger?.metadata.natsServerMonitoringEndpoint, 'nats.messaging.svc.cluster.local:8222');
    assert.equal(deployment(production, 'mailer-svc').spec?.replicas, undefined, 'KEDA owns the replica count');
    assert.ok(!production.ofKind('HorizontalPodAutoscaler').some((hpa) => hpa.metadata.name === 'notify-mailer-svc'));
    assert.ok(production.ofKind('HorizontalPodAutoscaler').some((hpa) => hpa.metadata.name === 'notify-gateway'));

    // The stream and consumer names follow NOTIFY_NATS_PREFIX as the services derive them (platform/src/nats).
    const prefixed = await render(helm, { valuesFiles: [productionValues], set: ['config.natsPrefix=staging_'] });
    const prefixedTrigger = (specOf(prefixed.get('ScaledObject', 'notify-mailer-svc')).triggers as { metadata: Record<string, string> }[])[0];
    assert.deepEqual([prefixedTrigger?.metadata.stream, prefixedTrigger?.metadata.consumer], ['STAGING_NOTIFY_JOBS', 'STAGING_mailer']);

    const hpa = await render(helm, { set: [...external, 'mailer.autoscaling.enabled=true'] });
    assert.equal(hpa.get('HorizontalPodAutoscaler', 'notify-mailer-svc').spec?.maxReplicas, 10);
    assert.equal(hpa.ofKind('ScaledObject').length, 0);
  });

  test('the migration Job runs before install and upgrade, after the hook Secret it reads and before any service', (t) => {
    if (skip) return t.skip(skip);
    const job = externalUrls.get('Job', 'notify-migration');
    const secret = externalUrls.get('Secret', 'notify-migration');
    for (const hook of [job, secret]) assert.equal(hook.metadata.annotations?.['helm.sh/hook'], 'pre-install,pre-upgrade');
    assert.ok(
      Number(secret.metadata.annotations?.['helm.sh/hook-weight']) < Number(job.metadata.annotations?.['helm.sh/hook-weight']),
      'the Secret is created first',
    );
    assert.match(secret.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? '', /hook-succeeded/);
    assert.match(job.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? '', /before-hook-creation/);
    const migrate = podSpec(job).containers[0] as Container;
    assert.deepEqual(migrate.command, ['node', 'platform/src/database/migrate-cli.ts']);
    // The URL holds the password: a file mounted from the hook Secret, as the services read theirs.
    assert.equal(env(migrate, 'DATABASE_URL_FILE')?.value, '/var/run/secrets/notify/database-url');
    assert.equal(env(migrate, 'DATABASE_URL'), undefined);
    const migrationSecrets = podSpec(job).volumes?.find((volume) => volume.name === 'secrets')?.secret;
    assert.deepEqual([migrationSecrets?.secretName, migrationSecrets?.items], ['notify-migration', [{ key: 'DATABASE_URL', path: 'database-url' }]]);
    assert.equal(Buffer.from(secret.data?.DATABASE_URL ?? '', 'base64').toString(), 'postgres://notify:pw@db.example:5432/notify');

    // With existingSecret the Secret exists before the release: no hook Secret.
    assert.equal(production.ofKind('Secret').length, 0);
    assert.equal(
      podSpec(production.get('Job', 'notify-migration')).volumes?.find((volume) => volume.name === 'secrets')?.secret?.secretName,
      'notify-connections',
    );
    // In dev mode the database is part of the release, and `helm install --wait` would run a post-install hook only
    // once the services are Ready, which they are not before the schema: a plain Job of the release, one per revision.
    const devJob = dev.get('Job', 'notify-migration-1');
    assert.equal(devJob.metadata.annotations?.['helm.sh/hook'], undefined);
    assert.deepEqual((podSpec(devJob).containers[0] as Container).command, ['node', 'platform/src/database/migrate-cli.ts']);
  });

  test('every service that uses the database starts only once the schema is current, in dev mode and in production', (t) => {
    if (skip) return t.skip(skip);
    for (const rendered of [dev, production]) {
      for (const deployment of rendered.ofKind('Deployment')) {
        const usesDatabase = podSpec(deployment).containers.some((container) => env(container, 'DATABASE_URL') ?? env(container, 'DATABASE_URL_FILE'));
        const waits = podSpec(deployment).initContainers?.find((container) => container.name === 'wait-for-schema');
        assert.equal(Boolean(waits), Boolean(usesDatabase), `${deployment.metadata.name}: waits for the schema if and only if it uses the database`);
        if (!waits) continue;
        assert.deepEqual(waits.command, ['node', 'platform/src/database/migrate-cli.ts', '--wait']);
        assert.equal(waits.image, (podSpec(deployment).containers[0] as Container).image, 'its own image: the migrations of its own release');
        assert.ok(env(waits, 'DATABASE_URL') ?? env(waits, 'DATABASE_URL_FILE'), `${deployment.metadata.name}: the init container reads DATABASE_URL`);
      }
    }
    assert.deepEqual(
      production
        .ofKind('Deployment')
        .filter((deployment) => podSpec(deployment).initContainers?.length)
        .map((deployment) => deployment.metadata.name)
        .sort(),
      ['notify-auth-svc', 'notify-dispatch-svc', 'notify-webhook-svc'],
    );
  });

  test('numbers reach the services as integers, never in exponent form (Helm reads large YAML integers as floats)', (t) => {
    if (skip) return t.skip(skip);
    const exponent = /^-?\d+(\.\d+)?e[+-]?\d+$/i;
    for (const rendered of [dev, production, externalUrls]) {
      const values = [
        ...rendered.ofKind('ConfigMap').flatMap((map) => Object.entries((map as { data?: Record<string, string> }).data ?? {})),
        ...rendered.objects
          .filter((object) => workloadKinds.has(object.kind))
          .flatMap((object) =>
            containersOf(object).flatMap((container) => (container.env ?? []).map((variable) => [variable.name, variable.value ?? ''] as const)),
          ),
      ];
      assert.ok(values.some(([name]) => name === 'NOTIFY_MAX_BATCH_BODY_BYTES'));
      assert.deepEqual(
        values.filter(([, value]) => exponent.test(value)),
        [],
      );
    }
  });

  test('NetworkPolicies leave only the gateway open and admit internal gRPC from the gateway and labelled clients', (t) => {
    if (skip) return t.skip(skip);
    type Rule = { ports: { port: string | number }[]; from?: Record<string, unknown>[] };
    const rules = (component: string): Rule[] => production.get('NetworkPolicy', `notify-${component}`).spec?.ingress as Rule[];
    const ports = (component: string): (string | number)[] => rules(component).flatMap((rule) => rule.ports.map((port) => port.port));
    assert.equal(rules('gateway').find((rule) => rule.ports[0]?.port === 'http')?.from, undefined, 'anyone may reach the API');
    assert.deepEqual(ports('mailer-svc'), ['metrics']);
    assert.deepEqual(ports('webhook-svc'), ['metrics']);
    // bounce-svc is the bounce domain's MX: any mail server may connect to its SMTP port.
    assert.deepEqual(ports('bounce-svc'), ['smtp', 'metrics']);
    assert.equal(rules('bounce-svc').find((rule) => rule.ports[0]?.port === 'smtp')?.from, undefined, 'anyone may deliver a report');
    const component = (name: string) => ({
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'notify', 'app.kubernetes.io/instance': 'notify', 'app.kubernetes.io/component': name } },
    });
    const labelledClients = { podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'notify', 'notify.io/grpc-client': 'true' } } };
    // dispatch-svc also answers the mailers (DKIM keys) and bounce-svc (reports); auth-svc neither.
    for (const [name, clients] of [
      ['auth-svc', [component('gateway'), labelledClients]],
      ['dispatch-svc', [component('gateway'), labelledClients, component('mailer-svc'), component('bounce-svc')]],
    ] as const) {
      assert.deepEqual(ports(name), ['grpc', 'metrics']);
      assert.deepEqual(rules(name).find((rule) => rule.ports[0]?.port === 'grpc')?.from, clients, name);
    }
    for (const rule of rules('gateway')
      .concat(rules('auth-svc'), rules('bounce-svc'))
      .filter((candidate) => candidate.ports[0]?.port === 'metrics')) {
      assert.deepEqual(rule.from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
    }
    assert.equal(production.get('Pod', 'notify-smoke-test').metadata.labels?.['notify.io/grpc-client'], 'true');
    // Every workload of the dev install is covered by a policy.
    const selected = dev
      .ofKind('NetworkPolicy')
      .map((policy) => (specOf(policy).podSelector as { matchLabels: Record<string, string> }).matchLabels['app.kubernetes.io/component']);
    for (const workload of dev.objects.filter((object) => ['Deployment', 'StatefulSet'].includes(object.kind))) {
      assert.ok(selected.includes(workload.metadata.labels?.['app.kubernetes.io/component']), `${workload.metadata.name} has no NetworkPolicy`);
    }
  });

  test('the webhook sender may connect only to DNS, the release, port 443 of public addresses and what the operator adds', async (t) => {
    if (skip) return t.skip(skip);
    type EgressRule = { ports?: { port: number; protocol: string }[]; to?: Record<string, { cidr?: string; except?: string[] } | Record<string, unknown>>[] };
    const policy = production.get('NetworkPolicy', 'notify-webhook-svc-egress');
    assert.deepEqual(policy.spec?.policyTypes, ['Egress']);
    assert.deepEqual((specOf(policy).podSelector as { matchLabels: Record<string, string> }).matchLabels['app.kubernetes.io/component'], 'webhook-svc');
    const egress = policy.spec?.egress as EgressRule[];
    assert.deepEqual(egress[0], {
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
    });
    assert.deepEqual(egress[1], { to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'notify' } } }] });
    const https = egress[2];
    assert.deepEqual(https?.ports, [{ port: 443, protocol: 'TCP' }]);
    const blocks = (https?.to ?? []).map((peer) => peer.ipBlock as { cidr: string; except: string[] });
    assert.deepEqual(
      blocks.map((block) => block.cidr),
      ['0.0.0.0/0', '::/0'],
    );
    for (const refused of ['10.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16'])
      assert.ok(blocks[0]?.except.includes(refused), refused);
    for (const refused of ['::1/128', 'fc00::/7', 'fe80::/10']) assert.ok(blocks[1]?.except.includes(refused), refused);
    // A real API server refuses an exception it does not read as a strict subset of the block's cidr: it reads an
    // IPv4-mapped IPv6 block (::ffff:0:0/96) as IPv4, so none may stand under ::/0, and no IPv6 one under 0.0.0.0/0.
    for (const except of blocks[0]?.except ?? []) assert.ok(!except.includes(':'), `${except} under 0.0.0.0/0`);
    for (const except of blocks[1]?.except ?? []) assert.ok(except.includes(':') && !/^::ffff:/i.test(except), `${except} under ::/0`);
    // Then only what the operator lists: the production example's NATS and PostgreSQL.
    assert.deepEqual(egress.slice(3), [
      { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'messaging' } } }], ports: [{ port: 4222, protocol: 'TCP' }] },
      { to: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ port: 5432, protocol: 'TCP' }] },
    ]);
    assert.equal((specOf(dev.get('NetworkPolicy', 'notify-webhook-svc-egress')).egress as EgressRule[]).length, 3, 'nothing else unless the operator adds it');
  });

  test("every pod may connect only to DNS, the release's pods it calls, and the ports of its external services where the operator put them", async (t) => {
    if (skip) return t.skip(skip);
    type Peer = Record<string, unknown>;
    type EgressRule = { ports: { port: number | string; protocol: string }[]; to?: Peer[] };
    const egress = (rendered: Rendered, component: string): EgressRule[] => {
      const policy = rendered.get('NetworkPolicy', `notify-${component}-egress`);
      assert.deepEqual(policy.spec?.policyTypes, ['Egress'], component);
      assert.equal((specOf(policy).podSelector as { matchLabels: Record<string, string> }).matchLabels['app.kubernetes.io/component'], component);
      return policy.spec?.egress as EgressRule[];
    };
    const dns: EgressRule = {
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
    };
    const pod = (component: string) => ({
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'notify', 'app.kubernetes.io/instance': 'notify', 'app.kubernetes.io/component': component } },
    });
    const call = (component: string, port: string): EgressRule => ({ to: [pod(component)], ports: [{ port, protocol: 'TCP' }] });
    const tcp = (...ports: number[]) => ports.map((port) => ({ port, protocol: 'TCP' }));
    const namespace = (name: string) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });

    // The production values name where each external service lives; the OTLP port comes from config.otlpEndpoint.
    const postgresql = { ports: tcp(5432), to: [{ ipBlock: { cidr: '10.0.0.0/8' } }] };
    const nats = { ports: tcp(4222), to: [namespace('messaging')] };
    const otlp = { ports: tcp(4318), to: [namespace('observability')] };
    assert.deepEqual(egress(production, 'gateway'), [
      dns,
      call('auth-svc', 'grpc'),
      call('dispatch-svc', 'grpc'),
      { ports: tcp(6379, 26379), to: [namespace('cache')] },
      nats,
      otlp,
    ]);
    assert.deepEqual(egress(production, 'auth-svc'), [dns, postgresql, nats, otlp]);
    assert.deepEqual(egress(production, 'dispatch-svc'), [dns, postgresql, nats, otlp]);
    assert.deepEqual(egress(production, 'mailer-svc'), [dns, call('dispatch-svc', 'grpc'), nats, { ports: tcp(465) }, otlp]);
    assert.deepEqual(egress(production, 'bounce-svc'), [dns, call('dispatch-svc', 'grpc'), otlp]);
    assert.deepEqual(egress(production, 'migration'), [dns, postgresql]);
    assert.deepEqual(egress(production, 'smoke-test'), [dns, call('gateway', 'http'), call('dispatch-svc', 'grpc')]);

    // By default: the usual ports, to any address; no collector rule while no traces are exported.
    assert.deepEqual(egress(externalUrls, 'mailer-svc'), [dns, call('dispatch-svc', 'grpc'), { ports: tcp(4222) }, { ports: tcp(25, 465, 587) }]);
    assert.deepEqual(egress(externalUrls, 'gateway').slice(3), [{ ports: tcp(6379) }, { ports: tcp(4222) }]);
    const https = await render(helm, { set: [...external, 'config.otlpEndpoint=https://otel.example', 'networkPolicy.egress.postgresql.ports={6432}'] });
    assert.deepEqual(egress(https, 'auth-svc'), [dns, { ports: tcp(6432) }, { ports: tcp(4222) }, { ports: tcp(443) }]);

    // Dev mode: the servers inside the release too (the mail sink listens on 1025), and they themselves reach nothing.
    assert.deepEqual(egress(dev, 'mailer-svc').slice(2), [
      { ports: tcp(4222) },
      { to: [pod('nats')], ports: tcp(4222) },
      { ports: tcp(25, 465, 587) },
      { to: [pod('mail-sink')], ports: tcp(1025) },
    ]);
    for (const server of ['postgresql', 'redis', 'nats', 'mail-sink']) assert.deepEqual(egress(dev, server), [dns], server);

    // Every workload, job and test pod is limited.
    for (const [name, rendered] of [
      ['dev', dev],
      ['production', production],
    ] as const) {
      const limited = rendered
        .ofKind('NetworkPolicy')
        .filter((policy) => (specOf(policy).policyTypes as string[]).includes('Egress'))
        .map((policy) => (specOf(policy).podSelector as { matchLabels: Record<string, string> }).matchLabels['app.kubernetes.io/component']);
      for (const workload of rendered.objects.filter((object) => workloadKinds.has(object.kind))) {
        const component = (workload.kind === 'Pod' ? workload.metadata.labels : podSpecLabels(workload))?.['app.kubernetes.io/component'];
        assert.ok(limited.includes(component ?? ''), `${name}: ${workload.kind}/${workload.metadata.name} has no egress policy`);
      }
    }
  });

  test("metrics ports admit the monitoring namespace by default, and the dev NATS monitoring port KEDA's too", (t) => {
    if (skip) return t.skip(skip);
    type Rule = { ports: { port: string | number }[]; from?: Record<string, unknown>[] };
    const monitoring = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    for (const component of notifyContainers) {
      const rules = externalUrls.get('NetworkPolicy', `notify-${component}`).spec?.ingress as Rule[];
      assert.deepEqual(rules.find((rule) => rule.ports[0]?.port === 'metrics')?.from, [monitoring], component);
    }
    const natsMonitor = (specOf(dev.get('NetworkPolicy', 'notify-nats')).ingress as Rule[]).find((rule) => rule.ports[0]?.port === 8222);
    assert.deepEqual(natsMonitor?.from, [monitoring, { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'keda' } } }]);
  });

  test('bounce-svc listens for SMTP on its container port behind a Service on port 25 whose type the operator picks', async (t) => {
    if (skip) return t.skip(skip);
    for (const rendered of [dev, production, externalUrls]) {
      const c = container(rendered, 'bounce-svc');
      assert.equal(env(c, 'BOUNCE_SMTP_PORT')?.value, '2526');
      assert.equal(env(c, 'METRICS_PORT')?.value, '9464');
      assert.equal(env(c, 'DISPATCH_SVC_ADDR')?.value, 'dns:///notify-dispatch-svc.notify.svc.cluster.local:50052');
      assert.equal(env(c, 'GRPC_DEADLINE')?.value, '5s', "its own deadline, not the gateway's from the ConfigMap");
      assert.ok(
        c.envFrom?.some((source) => source.configMapRef?.name === 'notify'),
        'BOUNCE_DOMAIN and BOUNCE_MAX_BYTES come from the ConfigMap',
      );
      // It talks to dispatch-svc only: no database, NATS, Redis or relay.
      for (const variable of ['DATABASE_URL', 'NATS_URL', 'REDIS_URL', 'SMTP_URL', 'ADMIN_TOKEN', 'GATEWAY_TOKEN', 'MAILER_TOKEN']) {
        assert.equal(env(c, variable) ?? env(c, `${variable}_FILE`), undefined, variable);
      }
      const smtp = rendered.get('Service', 'notify-bounce-svc');
      assert.deepEqual(smtp.spec?.ports, [{ name: 'smtp', port: 25, targetPort: 'smtp', protocol: 'TCP', appProtocol: 'smtp' }]);
      assert.equal(smtp.metadata.labels?.['notify.io/metrics'], undefined, 'the MX Service never publishes /metrics');
      const metrics = rendered.get('Service', 'notify-bounce-svc-metrics');
      assert.equal(metrics.spec?.clusterIP, 'None');
      assert.equal(metrics.metadata.labels?.['notify.io/metrics'], 'true');
    }
    assert.equal(dev.get('ConfigMap', 'notify').data?.BOUNCE_DOMAIN, 'bounces.notify.localhost');
    assert.equal(dev.get('ConfigMap', 'notify').data?.BOUNCE_MAX_BYTES, '10485760');
    assert.equal(production.get('ConfigMap', 'notify').data?.BOUNCE_DOMAIN, 'bounces.mail.example.com');
    assert.equal(dev.get('Service', 'notify-bounce-svc').spec?.type, 'ClusterIP', 'published only when the operator says so');
    assert.equal(dev.get('Deployment', 'notify-bounce-svc').spec?.replicas, 1);

    // The production example makes the Service the MX target and scales bounce-svc on CPU like the mailers can.
    const mx = production.get('Service', 'notify-bounce-svc');
    assert.deepEqual([mx.spec?.type, mx.spec?.externalTrafficPolicy], ['LoadBalancer', 'Local']);
    assert.equal(deployment(production, 'bounce-svc').spec?.replicas, undefined, 'the HPA owns the replica count');
    assert.deepEqual(production.get('HorizontalPodAutoscaler', 'notify-bounce-svc').spec?.scaleTargetRef, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'notify-bounce-svc',
    });
    // STARTTLS from a kubernetes.io/tls Secret, mounted beside the others.
    const tls = container(production, 'bounce-svc');
    assert.equal(env(tls, 'BOUNCE_TLS_KEY_FILE')?.value, '/var/run/secrets/notify-tls/tls.key');
    assert.equal(env(tls, 'BOUNCE_TLS_CERT_FILE')?.value, '/var/run/secrets/notify-tls/tls.crt');
    assert.deepEqual(podSpec(deployment(production, 'bounce-svc')).volumes?.find((volume) => volume.name === 'tls')?.secret?.secretName, 'notify-bounce-tls');
    assert.equal(env(container(dev, 'bounce-svc'), 'BOUNCE_TLS_KEY_FILE'), undefined, 'no certificate, no STARTTLS');

    const tuned = await render(helm, {
      valuesFiles: [devValues],
      set: [
        'bounce.service.type=NodePort',
        'bounce.service.port=2525',
        'bounce.smtpPort=25250',
        'config.bounceDomain=bounces.example.org',
        'config.bounce.maxBytes=2048',
      ],
    });
    assert.equal(tuned.get('Service', 'notify-bounce-svc').spec?.type, 'NodePort');
    assert.equal((specOf(tuned.get('Service', 'notify-bounce-svc')).ports as { port: number }[])[0]?.port, 2525);
    assert.equal(env(container(tuned, 'bounce-svc'), 'BOUNCE_SMTP_PORT')?.value, '25250');
    assert.deepEqual(
      [tuned.get('ConfigMap', 'notify').data?.BOUNCE_DOMAIN, tuned.get('ConfigMap', 'notify').data?.BOUNCE_MAX_BYTES],
      ['bounces.example.org', '2048'],
    );
    for (const wrong of [
      'config.bounceDomain=not a domain',
      'config.bounceDomain=localhost',
      'bounce.service.type=ExternalName',
      'bounce.service.externalTrafficPolicy=Nearest',
    ]) {
      const result = await template(helm, { valuesFiles: [devValues], set: [wrong] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /bounceDomain|type|externalTrafficPolicy/, wrong);
    }
  });

  test('NOTIFY_DATA_KEY is mounted as a file into dispatch-svc, the mailers, webhook-svc and bounce-svc, and into nothing else', async (t) => {
    if (skip) return t.skip(skip);
    const holders = ['bounce-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc'];
    const envOnly = await render(helm, { valuesFiles: [productionValues], set: ['secrets.mountAsFiles=false'] });
    for (const [name, rendered] of [
      ['dev', dev],
      ['production', production],
      ['external URLs', externalUrls],
      ['environment variables', envOnly],
    ] as const) {
      const having: string[] = [];
      for (const workload of rendered.objects.filter((object) => workloadKinds.has(object.kind))) {
        const items = (podSpec(workload).volumes ?? []).flatMap((volume) => volume.secret?.items ?? []);
        const variables = containersOf(workload).flatMap((c) => c.env ?? []);
        const mounted = items.some((item) => item.key === 'NOTIFY_DATA_KEY');
        const named = variables.some((variable) => variable.name.startsWith('NOTIFY_DATA_KEY') || variable.valueFrom?.secretKeyRef?.key === 'NOTIFY_DATA_KEY');
        if (mounted || named) having.push(workload.metadata.labels?.['app.kubernetes.io/component'] ?? workload.metadata.name);
      }
      assert.deepEqual(having.sort(), holders, name);
    }
    for (const component of holders) {
      assert.equal(env(container(production, component), 'NOTIFY_DATA_KEY_FILE')?.value, '/var/run/secrets/notify/data-key', component);
      assert.equal(env(container(production, component), 'NOTIFY_DATA_KEY'), undefined, `${component} reads the key from its file only`);
      assert.deepEqual(
        env(container(envOnly, component), 'NOTIFY_DATA_KEY')?.valueFrom?.secretKeyRef,
        { name: 'notify-connections', key: 'NOTIFY_DATA_KEY' },
        component,
      );
    }
    const renamed = await render(helm, { valuesFiles: [productionValues], set: ['secrets.keys.dataKey=DATA_KEY'] });
    const items = podSpec(deployment(renamed, 'bounce-svc')).volumes?.find((volume) => volume.name === 'secrets')?.secret?.items;
    assert.ok(
      items?.some((item) => item.key === 'DATA_KEY' && item.path === 'data-key'),
      JSON.stringify(items),
    );
  });

  test('without existingSecret the chart generates a data key of 32 random bytes, or writes the one it is given', async (t) => {
    if (skip) return t.skip(skip);
    const dataKey = (rendered: Rendered) => Buffer.from(rendered.get('Secret', 'notify-secrets').data?.NOTIFY_DATA_KEY ?? '', 'base64').toString();
    const generated = dataKey(externalUrls);
    // Base64, as NOTIFY_DATA_KEY takes it (platform/src/mail/data-key.ts), and never hex-looking.
    assert.match(generated, /^[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(generated, 'base64').length, 32);
    assert.notEqual(dataKey(dev), generated, 'each install draws its own');
    const given = Buffer.alloc(32, 7).toString('base64');
    assert.equal(dataKey(await render(helm, { set: [...external, `secrets.dataKey=${given}`] })), given);
    const tooShort = await template(helm, { set: [...external, 'secrets.dataKey=short'] });
    assert.notEqual(tooShort.code, 0);
    assert.match(tooShort.stderr, /dataKey/);
  });

  test('the mailers ask dispatch-svc for DKIM keys with their own token and link unsubscribes to the public URL', async (t) => {
    if (skip) return t.skip(skip);
    const mailer = container(production, 'mailer-svc');
    assert.equal(env(mailer, 'DISPATCH_SVC_ADDR')?.value, 'dns:///notify-dispatch-svc.notify.svc.cluster.local:50052');
    assert.equal(env(mailer, 'MAILER_TOKEN_FILE')?.value, '/var/run/secrets/notify/mailer-token');
    assert.equal(env(mailer, 'GATEWAY_TOKEN_FILE'), undefined, 'the mailers cannot send');
    const publicUrl = (rendered: Rendered) => rendered.get('ConfigMap', 'notify').data?.NOTIFY_PUBLIC_URL;
    assert.equal(publicUrl(production), 'https://notify.example.com', 'config.publicUrl as written');
    assert.ok(
      (specOf(production.get('Ingress', 'notify')).rules as { http: { paths: { path: string }[] } }[])[0]?.http.paths.some((path) => path.path === '/u/'),
      'the production Ingress routes the unsubscribe links to the gateway',
    );
    // Empty: taken from the chart's own Ingress or HTTPRoute, else left to the mailers' default.
    assert.equal(publicUrl(dev), 'http://notify.example.com', 'the dev Ingress without TLS');
    const ingressTls = await render(helm, {
      valuesFiles: [devValues],
      set: [
        'ingress.enabled=true',
        'ingress.hosts[0].host=mail.example.org',
        'ingress.hosts[0].paths[0].path=/',
        'ingress.hosts[0].paths[0].pathType=Prefix',
        'ingress.tls[0].secretName=tls',
        'ingress.tls[0].hosts[0]=mail.example.org',
      ],
    });
    assert.equal(publicUrl(ingressTls), 'https://mail.example.org');
    assert.equal(publicUrl(externalUrls), 'https://notify.example.com', 'the HTTPRoute hostname');
    assert.equal(publicUrl(await render(helm, { valuesFiles: [devValues] })), undefined);
    assert.equal(
      publicUrl(await render(helm, { valuesFiles: [devValues], set: ['config.publicUrl=https://notify.example.org/base/'] })),
      'https://notify.example.org/base',
    );
    for (const wrong of [
      'config.publicUrl=notify.example.org',
      'config.publicUrl=ftp://notify.example.org',
      'config.publicUrl=https://notify.example.org/?a=1',
    ]) {
      const result = await template(helm, { valuesFiles: [devValues], set: [wrong] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /publicUrl/, wrong);
    }
  });

  test('PodDisruptionBudgets keep every component available and the gateway scales with an HPA', (t) => {
    if (skip) return t.skip(skip);
    for (const component of notifyContainers) assert.equal(production.get('PodDisruptionBudget', `notify-${component}`).spec?.maxUnavailable, 1);
    const hpa = production.get('HorizontalPodAutoscaler', 'notify-gateway');
    assert.deepEqual([hpa.spec?.minReplicas, hpa.spec?.maxReplicas], [3, 20]);
    assert.equal(env(container(production, 'gateway'), 'NOTIFY_GATEWAY_REPLICAS')?.value, '3');
  });

  test('ServiceMonitor and PrometheusRule carry the kube-prometheus-stack release label, dashboards the sidecar label', async (t) => {
    if (skip) return t.skip(skip);
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) assert.equal(production.get(kind, 'notify').metadata.labels?.release, 'kube-prometheus-stack');
    const relabelled = await render(helm, {
      valuesFiles: [productionValues],
      set: ['metrics.serviceMonitor.labels.release=prom', 'metrics.prometheusRule.labels.release=prom'],
    });
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) assert.equal(relabelled.get(kind, 'notify').metadata.labels?.release, 'prom');
    const endpoint = (specOf(production.get('ServiceMonitor', 'notify')).endpoints as Record<string, unknown>[])[0];
    assert.equal(endpoint?.port, 'metrics');
    assert.equal(endpoint?.honorLabels, true, "the services' own `service` label must survive the scrape");
    const monitored = production.ofKind('Service').filter((service) => service.metadata.labels?.['notify.io/metrics'] === 'true');
    assert.deepEqual(monitored.map((service) => service.metadata.labels?.['app.kubernetes.io/component']).sort(), [...notifyContainers].sort());

    const dashboards = production.objects.filter((object) => object.kind === 'ConfigMap' && object.metadata.labels?.grafana_dashboard === '1');
    assert.deepEqual(dashboards.map((map) => Object.keys(map.data ?? {})[0]).sort(), ['notify-overview.json', 'notify-services.json']);
    for (const map of dashboards) {
      assert.equal(map.metadata.namespace, 'monitoring');
      const file = Object.keys(map.data ?? {})[0] ?? '';
      const dashboard = JSON.parse(map.data?.[file] ?? '') as {
        uid: string;
        title: string;
        templating: { list: { name: string; type: string }[] };
        panels: { type: string; datasource?: { uid: string }; targets?: { datasource?: { uid: string } }[] }[];
      };
      assert.deepEqual(dashboard, JSON.parse(readFileSync(join(chartDir, 'dashboards', file), 'utf8')));
      // Portable across Grafanas: the data source is a variable, never a fixed uid.
      assert.ok(
        dashboard.templating.list.some((variable) => variable.name === 'datasource' && variable.type === 'datasource'),
        file,
      );
      // biome-ignore lint/suspicious/noTemplateCurlyInString: `${datasource}` is Grafana's own variable syntax, the literal text a dashboard must hold.
      const datasourceVariable = '${datasource}';
      for (const panel of dashboard.panels.filter((candidate) => candidate.type !== 'row')) {
        assert.equal(panel.datasource?.uid, datasourceVariable, `${file}: ${JSON.stringify(panel).slice(0, 80)}`);
        for (const target of panel.targets ?? []) assert.equal(target.datasource?.uid, datasourceVariable);
      }
    }
    assert.deepEqual(dashboards.map((map) => (JSON.parse(Object.values(map.data ?? {})[0] ?? '{}') as { title: string }).title).sort(), [
      'Notify overview',
      'Notify services',
    ]);
  });

  test("each alert links its runbook at metrics.prometheusRule.runbookBaseUrl, by default the runbooks' file in this repository", async (t) => {
    if (skip) return t.skip(skip);
    const runbooks = (rendered: Rendered) =>
      (rendered.get('PrometheusRule', 'notify').spec as { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] }).groups
        .flatMap((group) => group.rules)
        .map((rule) => [rule.alert, rule.annotations.runbook_url]);
    const expected = (rendered: Rendered, base: string) => runbooks(rendered).map(([alert]) => [alert, `${base}#${alert?.toLowerCase()}`]);
    assert.ok(runbooks(dev).length >= 9);
    // By default: the file's path inside the repository, which exists and holds the runbooks.
    assert.deepEqual(runbooks(dev), expected(dev, 'docs/operations.md'));
    assert.match(readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8'), /^## Runbooks$/m);
    // The production example points at where the on-call reads that file.
    assert.deepEqual(runbooks(production), expected(production, 'https://git.example.com/platform/notify/blob/v0.1.0/docs/operations.md'));
    const wiki = await render(helm, {
      valuesFiles: [devValues],
      set: [...everythingOn, 'metrics.prometheusRule.runbookBaseUrl=https://wiki.example.com/notify/operations'],
    });
    assert.deepEqual(runbooks(wiki), expected(wiki, 'https://wiki.example.com/notify/operations'));
    for (const wrong of ['https://wiki.example.com/ops#runbooks', 'javascript:alert(1)', 'runbooks please', '']) {
      const result = await template(helm, { valuesFiles: [devValues], set: [...everythingOn, `metrics.prometheusRule.runbookBaseUrl=${wrong}`] });
      assert.notEqual(result.code, 0, wrong);
      assert.match(result.stderr, /runbookBaseUrl/, wrong);
    }
  });

  test("the helm test hook sends through the gateway with the operator's key and follows the message with notifyctl", (t) => {
    if (skip) return t.skip(skip);
    const pod = production.get('Pod', 'notify-smoke-test');
    const script = production.get('ConfigMap', 'notify-smoke-test');
    assert.equal(pod.metadata.annotations?.['helm.sh/hook'], 'test');
    assert.equal(script.metadata.annotations?.['helm.sh/hook'], 'test');
    assert.ok(Number(script.metadata.annotations?.['helm.sh/hook-weight']) < Number(pod.metadata.annotations?.['helm.sh/hook-weight']));
    assert.equal(script.data?.['smoke-test.ts'], readFileSync(join(chartDir, 'files', 'smoke-test.ts'), 'utf8').trimEnd());
    const c = podSpec(pod).containers[0] as Container;
    assert.deepEqual(c.command, ['node', '/etc/notify-smoke-test/smoke-test.ts']);
    assert.equal(env(c, 'GATEWAY_URL')?.value, 'http://notify-gateway.notify.svc.cluster.local:80');
    assert.deepEqual(env(c, 'API_KEY')?.valueFrom?.secretKeyRef, { name: 'notify-smoke-test', key: 'api-key' });
    // notifyctl messages list: the admin token, the only one ListMessages takes.
    assert.deepEqual(env(c, 'ADMIN_TOKEN')?.valueFrom?.secretKeyRef, { name: 'notify-connections', key: 'ADMIN_TOKEN' });
    assert.equal(env(c, 'GATEWAY_TOKEN'), undefined);
  });

  test('with grpcTls the servers mount their key pair, the clients only the CA, and cert-manager names every Service address', async (t) => {
    if (skip) return t.skip(skip);
    const mountPath = '/var/run/secrets/notify-grpc-tls';
    const tlsVolume = (workload: K8sObject) => podSpec(workload).volumes?.find((volume) => volume.name === 'grpc-tls')?.secret;
    const probe = (c: Container, which: 'startupProbe' | 'livenessProbe' | 'readinessProbe') =>
      c[which] as { grpc?: unknown; httpGet?: { path: string } } | undefined;
    for (const server of ['auth-svc', 'dispatch-svc']) {
      const c = container(production, server);
      assert.equal(env(c, 'GRPC_TLS_CERT_FILE')?.value, `${mountPath}/tls.crt`, server);
      assert.equal(env(c, 'GRPC_TLS_KEY_FILE')?.value, `${mountPath}/tls.key`, server);
      assert.ok(
        c.volumeMounts?.some((mount) => mount.name === 'grpc-tls' && mount.mountPath === mountPath),
        server,
      );
      assert.deepEqual(
        tlsVolume(deployment(production, server)),
        {
          secretName: 'notify-grpc-tls',
          items: [
            { key: 'tls.crt', path: 'tls.crt' },
            { key: 'tls.key', path: 'tls.key' },
          ],
        },
        server,
      );
      // The kubelet's gRPC probe speaks no TLS: the ops listener answers instead.
      assert.deepEqual(
        (['startupProbe', 'livenessProbe', 'readinessProbe'] as const).map((which) => probe(c, which)?.httpGet?.path),
        ['/healthz', '/healthz', '/readyz'],
        server,
      );
      assert.equal(probe(c, 'readinessProbe')?.grpc, undefined, server);
    }
    const clients: [string, K8sObject][] = [
      ...['gateway', 'mailer-svc', 'bounce-svc'].map((component) => [component, deployment(production, component)] as [string, K8sObject]),
      ['smoke test', production.get('Pod', 'notify-smoke-test')],
    ];
    for (const [name, workload] of clients) {
      const c = containersOf(workload)[0] as Container;
      assert.equal(env(c, 'GRPC_TLS_CA_FILE')?.value, `${mountPath}/ca.crt`, name);
      assert.equal(env(c, 'GRPC_TLS_KEY_FILE'), undefined, name);
      assert.deepEqual(tlsVolume(workload), { secretName: 'notify-grpc-tls', items: [{ key: 'ca.crt', path: 'ca.crt' }] }, `${name} holds no server key`);
    }
    assert.equal(env(container(production, 'webhook-svc'), 'GRPC_TLS_CA_FILE'), undefined, 'webhook-svc calls no gRPC service');

    // The documented default: a self-signed Issuer, the release's CA, and a certificate for the names the clients dial.
    assert.deepEqual(production.get('Issuer', 'notify-grpc-selfsigned').spec, { selfSigned: {} });
    const ca = production.get('Certificate', 'notify-grpc-ca').spec ?? {};
    assert.deepEqual([ca.isCA, ca.secretName, (ca.issuerRef as { name: string }).name], [true, 'notify-grpc-ca', 'notify-grpc-selfsigned']);
    assert.deepEqual(production.get('Issuer', 'notify-grpc-ca').spec, { ca: { secretName: 'notify-grpc-ca' } });
    const certificate = production.get('Certificate', 'notify-grpc-tls').spec ?? {};
    assert.equal(certificate.secretName, 'notify-grpc-tls');
    assert.equal((certificate.issuerRef as { name: string }).name, 'notify-grpc-ca');
    const dnsNames = certificate.dnsNames as string[];
    const dialed = [env(container(production, 'gateway'), 'AUTH_SVC_ADDR')?.value, env(container(production, 'mailer-svc'), 'DISPATCH_SVC_ADDR')?.value];
    for (const address of dialed) {
      const host = /^dns:\/\/\/([^:]+):\d+$/.exec(address ?? '')?.[1];
      assert.ok(host && dnsNames.includes(host), `${address} is named on the certificate (${dnsNames.join(', ')})`);
    }
    assert.ok(dnsNames.includes('notify-auth-svc.notify.svc') && dnsNames.includes('notify-dispatch-svc'));

    // Off (the default), nothing is mounted and no cert-manager object is rendered.
    assert.equal(env(container(dev, 'gateway'), 'GRPC_TLS_CA_FILE'), undefined);
    assert.equal(dev.ofKind('Certificate').length + dev.ofKind('Issuer').length, 0);
    // Your own Secret: no cert-manager objects, and every pod mounts the Secret you named.
    const own = await render(helm, { valuesFiles: [productionValues], set: ['grpcTls.certManager.enabled=false', 'grpcTls.secretName=my-grpc-certs'] });
    assert.equal(own.ofKind('Certificate').length + own.ofKind('Issuer').length, 0);
    for (const component of ['auth-svc', 'gateway']) assert.equal(tlsVolume(deployment(own, component))?.secretName, 'my-grpc-certs', component);
  });

  test('values-production.yaml turns on every protection the docs describe: NATS credentials, gRPC TLS, egress policies', async (t) => {
    if (skip) return t.skip(skip);
    for (const component of ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc']) {
      assert.equal(env(container(production, component), 'NATS_USER')?.value, component, `${component} has its own NATS user`);
    }
    for (const server of ['auth-svc', 'dispatch-svc']) assert.ok(env(container(production, server), 'GRPC_TLS_CERT_FILE'), `${server} serves TLS`);
    for (const client of ['gateway', 'mailer-svc', 'bounce-svc']) assert.ok(env(container(production, client), 'GRPC_TLS_CA_FILE'), `${client} verifies TLS`);
    const egress = production
      .ofKind('NetworkPolicy')
      .filter((policy) => (policy.spec?.policyTypes as string[] | undefined)?.includes('Egress'))
      .map((policy) => policy.metadata.name);
    for (const component of ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'migration']) {
      assert.ok(egress.includes(`notify-${component}-egress`), `${component} has an egress policy: ${egress.join(', ')}`);
    }
  });

  test('with natsAuth each NATS client connects as itself, mounting only its own password or NKey seed', async (t) => {
    if (skip) return t.skip(skip);
    const mountPath = '/var/run/secrets/notify-nats';
    const natsVolume = (workload: K8sObject) => podSpec(workload).volumes?.find((volume) => volume.name === 'nats-auth')?.secret;
    // The production values turn it on: a password per component from the Secret notify-nats.
    const passwords = production;
    for (const component of ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc']) {
      const c = container(passwords, component);
      assert.equal(env(c, 'NATS_USER')?.value, component, 'the user named in docs/operations.md');
      assert.equal(env(c, 'NATS_PASSWORD_FILE')?.value, `${mountPath}/password`, component);
      assert.deepEqual(natsVolume(deployment(passwords, component)), { secretName: 'notify-nats', items: [{ key: component, path: 'password' }] }, component);
    }
    assert.equal(natsVolume(deployment(passwords, 'bounce-svc')), undefined, 'bounce-svc does not use NATS');
    const seeds = await render(helm, { valuesFiles: [productionValues], set: ['natsAuth.mode=nkey', 'natsAuth.secretName=notify-nats'] });
    const dispatch = container(seeds, 'dispatch-svc');
    assert.equal(env(dispatch, 'NATS_NKEY_SEED_FILE')?.value, `${mountPath}/nkey-seed`);
    assert.equal(env(dispatch, 'NATS_USER'), undefined);
    assert.deepEqual(natsVolume(deployment(seeds, 'dispatch-svc'))?.items, [{ key: 'dispatch-svc', path: 'nkey-seed' }]);
    // Off by default; a mode without its Secret, or an unknown mode, stops the install.
    assert.equal(env(container(dev, 'dispatch-svc'), 'NATS_USER'), undefined);
    const missing = await template(helm, { valuesFiles: [productionValues], set: ['natsAuth.mode=nkey', 'natsAuth.secretName='] });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /natsAuth\.mode needs natsAuth\.secretName/);
    const unknown = await template(helm, { valuesFiles: [productionValues], set: ['natsAuth.mode=token', 'natsAuth.secretName=notify-nats'] });
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /\/natsAuth\/mode': value must be one of/);
  });

  test('values.schema.json refuses unknown keys at every level', async (t) => {
    if (skip) return t.skip(skip);
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as unknown;
    // Every object the chart defines is closed; only Kubernetes objects passed through as written (affinity,
    // security contexts, ...) are open, and they say so.
    const open: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (!node || typeof node !== 'object') return;
      const record = node as Record<string, unknown>;
      if (
        record.type === 'object' &&
        record.additionalProperties !== false &&
        !record.additionalProperties &&
        !String(record.description ?? '').includes('passed through')
      )
        open.push(path);
      for (const [key, value] of Object.entries(record)) walk(value, `${path}/${key}`);
    };
    walk(schema, '');
    assert.deepEqual(
      open.filter((path) => path !== '/properties/global'),
      [],
    );
    for (const typo of [
      'gateway.replicaCont=1',
      'bounce.service.tpye=LoadBalancer',
      'config.mailer.retryBse=1m',
      'metrics.prometheusRule.thresholds.outboxBaclog=1',
      'secrets.keys.databaseURL=X',
      'dev.postgresql.persistance.enabled=true',
    ]) {
      const result = await template(helm, { valuesFiles: [devValues], set: [typo] });
      assert.notEqual(result.code, 0, typo);
      assert.match(result.stderr, /additional properties .* not allowed/, typo);
    }
    const badRate = await template(helm, { valuesFiles: [devValues], set: ['config.gateway.sendRate=lots'] });
    assert.match(badRate.stderr, /sendRate/);
  });
});
