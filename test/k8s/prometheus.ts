// Debian's Prometheus on the node, scraping the release's pods with the chart's alert rules (`npm run test:k8s`).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { clusterRoot, command, helm, isService, json, type Pod, release } from './kube.ts';

const prometheusPort = 19090;

async function prometheusApi<T>(path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/${path}`);
  return ((await response.json()) as { data: T }).data;
}

/**
 * Debian's Prometheus on the node (installed when missing), as an operator's would run: it finds the release's pods
 * through the API server and scrapes each port named `metrics`; its rules are the chart's PrometheusRule.
 */
async function startPrometheus(namespace: string, values: readonly string[]): Promise<{ kill(): void }> {
  if ((await command('sh', ['-c', 'command -v prometheus'], { check: false })).code !== 0) {
    await command('apt-get', ['install', '-y', '-q', 'prometheus'], { timeoutMs: 10 * 60_000 });
  }
  const rendered = await helm([
    'template',
    release,
    'helm/notify',
    '-n',
    namespace,
    ...values,
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

/**
 * Prometheus started on the release in `namespace` (rendered with `values`): every service pod is a target and up,
 * and every alert rule of the chart evaluates without error against the live metrics.
 */
export async function checkPrometheus(namespace: string, values: readonly string[]): Promise<void> {
  const prometheus = await startPrometheus(namespace, values);
  try {
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
  } finally {
    prometheus.kill();
  }
}
