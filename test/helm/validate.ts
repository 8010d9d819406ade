// Validates rendered objects against the Kubernetes API offline, two ways that complement each other:
// - kube-strict (test/helm/kube-strict): strict decoding into the API's own Go types, as the API server does for
//   `kubectl apply --validate=strict`: unknown or misspelt fields and wrong types. Built-in kinds only.
// - kubernetes-models (npm, generated from the Kubernetes OpenAPI and from the CRDs of KEDA, prometheus-operator,
//   Gateway API and cert-manager): required fields, enums and formats, for built-in kinds and for ScaledObject,
//   ServiceMonitor, PrometheusRule, HTTPRoute, Issuer and Certificate.
import type { K8sObject } from './chart.ts';
import { runTool } from './tools.ts';

/** npm package holding the models of each CRD group this chart renders; built-in groups come from kubernetes-models. */
const crdPackages: Readonly<Record<string, string>> = {
  'keda.sh': '@kubernetes-models/keda',
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
  'cert-manager.io': '@kubernetes-models/cert-manager',
};

interface Model {
  validate(): void;
}
type ModelClass = new (data: unknown) => Model;

async function modelOf(object: K8sObject): Promise<ModelClass> {
  const [group, version] = object.apiVersion.includes('/') ? (object.apiVersion.split('/') as [string, string]) : ['', object.apiVersion];
  const specifier = crdPackages[group]
    ? `${crdPackages[group]}/${group}/${version}/${object.kind}`
    : `kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`;
  let module: Record<string, ModelClass>;
  try {
    module = (await import(specifier)) as Record<string, ModelClass>;
  } catch {
    throw new Error(`no schema for ${object.apiVersion} ${object.kind} (looked for ${specifier})`);
  }
  const model = module[object.kind];
  if (!model) throw new Error(`${specifier} does not export ${object.kind}`);
  return model;
}

/** Problems found by the OpenAPI/CRD schemas, one line per object that has any. */
export async function validateWithModels(objects: readonly K8sObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const object of objects) {
    try {
      const Model = await modelOf(object);
      new Model(object).validate();
    } catch (error) {
      problems.push(`${object.kind}/${object.metadata.name}: ${(error as Error).message}`);
    }
  }
  return problems;
}

export interface StrictResult {
  readonly problems: string[];
  /** Kinds kube-strict does not know (the CRDs), which only the models validate. */
  readonly skippedKinds: string[];
  readonly checked: number;
}

export async function validateStrictly(kubeStrict: string, manifest: string): Promise<StrictResult> {
  const result = await runTool(kubeStrict, [], { input: manifest });
  if (result.code > 1) throw new Error(`kube-strict could not run: ${result.stderr}`);
  const lines = result.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { kind: string; name: string; status: 'ok' | 'skipped' | 'error'; error?: string });
  return {
    problems: lines.filter((line) => line.status === 'error').map((line) => `${line.kind}/${line.name}: ${line.error}`),
    skippedKinds: [...new Set(lines.filter((line) => line.status === 'skipped').map((line) => line.kind))],
    checked: lines.filter((line) => line.status === 'ok').length,
  };
}
