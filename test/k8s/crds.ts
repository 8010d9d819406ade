// The CustomResourceDefinitions of cert-manager, KEDA and the Prometheus operator, which the production values'
// objects (Issuer, Certificate, ScaledObject, ServiceMonitor, PrometheusRule) need: taken from each project's own Go
// module at the release test/k8s/crds/go.mod pins (its go.sum checks the content), never committed here.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { command, kubectl } from './kube.ts';

const module = join('test', 'k8s', 'crds');
/** Each module and the directory in it that holds its CRDs as plain manifests. */
const sources = {
  'github.com/cert-manager/cert-manager': 'deploy/crds',
  'github.com/kedacore/keda/v2': 'config/crd/bases',
  'github.com/prometheus-operator/prometheus-operator': 'example/prometheus-operator-crd',
};

/** The CRD manifests, downloaded into Go's module cache the first time (Go module proxy). */
async function manifests(): Promise<string[]> {
  const files: string[] = [];
  for (const [path, directory] of Object.entries(sources)) {
    const download = await command('sh', ['-c', `cd ${module} && GOFLAGS=-mod=mod go mod download -json ${path}`]);
    const { Dir: root } = JSON.parse(download.stdout) as { Dir: string };
    const folder = join(root, directory);
    files.push(
      ...readdirSync(folder)
        .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
        .map((name) => join(folder, name)),
    );
  }
  return files;
}

/** Applies every CRD (server-side: the Prometheus operator's are too large for client-side apply) and waits until each is served. */
export async function installCrds(): Promise<void> {
  const files = await manifests();
  await kubectl(['apply', '--server-side', '--force-conflicts', ...files.flatMap((file) => ['-f', file])]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...files.flatMap((file) => ['-f', file])]);
}
