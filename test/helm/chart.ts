// Renders helm/notify with the pinned helm and hands the objects to the checks, already parsed.
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { type Result, repoRoot, runTool } from './tools.ts';

export const chartDir = join(repoRoot, 'helm', 'notify');
export const devValues = join(chartDir, 'values-dev.yaml');
export const productionValues = join(chartDir, 'values-production.yaml');

/** The Kubernetes version rendering assumes (helm's own default is far older than any cluster the chart supports). */
export const kubeVersion = '1.33.0';

/** Everything `prometheusRule`, `serviceMonitor`, dashboards and KEDA add, on top of the dev values. */
export const everythingOn = [
  'metrics.serviceMonitor.enabled=true',
  'metrics.prometheusRule.enabled=true',
  'metrics.dashboards.enabled=true',
  'mailer.keda.enabled=true',
  'ingress.enabled=true',
];

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  [field: string]: unknown;
}

export interface Rendered {
  readonly manifest: string;
  readonly objects: readonly K8sObject[];
  /** The first object of a kind and name (throws when there is none). */
  get(kind: string, name: string): K8sObject;
  ofKind(kind: string): K8sObject[];
}

export interface RenderOptions {
  valuesFiles?: readonly string[];
  set?: readonly string[];
  release?: string;
  namespace?: string;
}

function args(options: RenderOptions): string[] {
  return [...(options.valuesFiles ?? []).flatMap((file) => ['--values', file]), ...(options.set ?? []).flatMap((value) => ['--set', value])];
}

/** `helm template`; resolves the tool's result, so a test can assert on a refusal too. */
export function template(helm: string, options: RenderOptions = {}): Promise<Result> {
  return runTool(helm, [
    'template',
    options.release ?? 'notify',
    chartDir,
    '--namespace',
    options.namespace ?? 'notify',
    '--kube-version',
    kubeVersion,
    ...args(options),
  ]);
}

export function lint(helm: string, options: RenderOptions = {}): Promise<Result> {
  return runTool(helm, ['lint', chartDir, '--strict', '--kube-version', kubeVersion, ...args(options)]);
}

export function parseManifest(manifest: string): Rendered {
  const objects = parseAllDocuments(manifest)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(`rendered YAML does not parse: ${document.errors[0]?.message}`);
      return document.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null && typeof object === 'object');
  return {
    manifest,
    objects,
    get(kind, name) {
      const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
      if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((object) => `${object.kind}/${object.metadata.name}`).join(', ')}`);
      return found;
    },
    ofKind: (kind) => objects.filter((object) => object.kind === kind),
  };
}

/** Renders and parses; fails with helm's own message when it refuses. */
export async function render(helm: string, options: RenderOptions = {}): Promise<Rendered> {
  const result = await template(helm, options);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return parseManifest(result.stdout);
}

interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: Record<string, unknown>;
  volumes?: { name: string; emptyDir?: unknown; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
  automountServiceAccountToken?: boolean;
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  securityContext?: Record<string, unknown>;
  readinessProbe?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  startupProbe?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

/** The pod template of a workload (Deployment, StatefulSet, Job) or the spec of a Pod. */
export function podSpec(object: K8sObject): PodSpec {
  if (object.kind === 'Pod') return object.spec as unknown as PodSpec;
  const template = (object.spec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec;
  if (!template) throw new Error(`${object.kind}/${object.metadata.name} has no pod template`);
  return template;
}

export const workloadKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'Pod']);
