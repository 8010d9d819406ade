// What `npm run test:k8s` drives: the images (`npm run images`), the local cluster (`npm run cluster`), kubectl and helm
// against it, and pods that run a command inside the release's network (notifyctl, a request to the mail sink).
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureHelm, repoRoot } from '../helm/tools.ts';

export const clusterRoot = join(repoRoot, '.data', 'cluster');
const kubeconfig = join(clusterRoot, 'kubeconfig');
export const namespace = 'notify';
export const release = 'notify';
/** The tag `npm run images` gives every image it builds. */
export const imageTag = process.env.NOTIFY_IMAGE_TAG ?? 'dev';
export const serviceImages = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'toolbox'];
/** Notify's own services, each a Deployment with a metrics port. */
export const services = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc'];
export const isService = (pod: Pod): boolean => services.includes(pod.metadata.labels?.['app.kubernetes.io/component'] ?? '');
export const devImages = { postgresql: 'postgresql', redis: 'redis', nats: 'nats', mailSink: 'mail-sink' } as const;

/** The parts of Kubernetes objects the tests read. */
export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly lastTransitionTime: string;
}
export interface Pod {
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec: {
    readonly containers?: readonly {
      readonly image: string;
      readonly ports?: readonly { readonly name?: string; readonly containerPort: number }[];
    }[];
    readonly initContainers?: readonly { readonly name: string }[];
  };
  readonly status: { readonly phase: string; readonly podIP?: string; readonly conditions?: readonly Condition[] };
}
export interface Job {
  readonly metadata: { readonly name: string };
  readonly status: { readonly succeeded?: number; readonly completionTime?: string };
}

export interface Deployment {
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec: { readonly replicas?: number; readonly template: { readonly spec: { readonly containers: readonly { readonly image: string }[] } } };
  readonly status: { readonly replicas?: number; readonly updatedReplicas?: number; readonly readyReplicas?: number };
}

export interface Output {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end, its output kept; `check` throws on a non-zero exit with the command's stderr. */
export function command(file: string, args: readonly string[], options: { input?: string; check?: boolean; timeoutMs?: number } = {}): Promise<Output> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 10 * 60_000, env: { ...process.env, KUBECONFIG: kubeconfig } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        if (code !== 0 && options.check !== false) {
          return reject(new Error(`${file} ${args.join(' ')} exited ${code}:\n${stderr || stdout}`));
        }
        resolve({ code, stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** A long step whose output is shown as it comes (image builds, the cluster coming up). */
export function step(file: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} exited ${code}`))));
  });
}

export const kubectl = (args: readonly string[], options?: { input?: string; check?: boolean; timeoutMs?: number }) =>
  command(join(clusterRoot, 'kubectl'), args, options);

export async function helm(args: readonly string[], options?: { check?: boolean; timeoutMs?: number }): Promise<Output> {
  const tool = await ensureHelm();
  if ('skip' in tool) throw new Error(tool.skip);
  return command(tool.path, args, options);
}

export async function json<T>(args: readonly string[]): Promise<T> {
  return JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as T;
}

interface PodSpecOptions {
  readonly name: string;
  readonly image: string;
  readonly args: readonly string[];
  readonly env?: Record<string, string>;
  readonly labels?: Record<string, string>;
  /** Where the pod runs; the dev release's namespace unless given. */
  readonly namespace?: string;
}

/**
 * Runs one command in a pod of the namespace, as the `restricted` Pod Security level admits it, and returns its
 * output once it ends. The labels decide what the NetworkPolicies let it reach.
 */
export async function runPod(options: PodSpecOptions): Promise<Output> {
  const where = options.namespace ?? namespace;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, namespace: where, labels: options.labels ?? {} },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'run',
          image: options.image,
          imagePullPolicy: 'IfNotPresent',
          workingDir: '/app',
          // A NetworkPolicy enforcer admits a new pod's address a moment after the pod starts (kube-router: about a
          // second): a connection made at once may be refused, which no test here is about.
          command: ['sh', '-c', 'sleep 3 && exec "$@"', 'run'],
          args: options.args,
          env: Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value })),
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
        },
      ],
      volumes: [{ name: 'tmp', emptyDir: {} }],
    },
  };
  await kubectl(['-n', where, 'delete', 'pod', options.name, '--ignore-not-found', '--wait']);
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod) });
  // Until the pod has ended either way: a failed command is reported at once, with its output.
  let phase = '';
  for (const started = Date.now(); Date.now() - started < 120_000; ) {
    phase = (await kubectl(['-n', where, 'get', 'pod', options.name, '-o', 'jsonpath={.status.phase}'])).stdout;
    if (phase === 'Succeeded' || phase === 'Failed') break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const logs = await kubectl(['-n', where, 'logs', options.name], { check: false });
  await kubectl(['-n', where, 'delete', 'pod', options.name, '--wait=false']);
  return { code: phase === 'Succeeded' ? 0 : 1, stdout: logs.stdout, stderr: logs.stderr || `the pod ended ${phase || 'not at all'}` };
}

export const image = (name: string): string => `localhost/notify-${name}:${imageTag}`;

/** Builds the images (cached ones are kept), starts the cluster anew and loads every image into its node. */
export async function freshCluster(): Promise<void> {
  await step('bash', ['cli/bin/images.sh']);
  await step('bash', ['test/k8s/cluster.sh', 'down']);
  await step('bash', ['test/k8s/cluster.sh', 'up']);
  const images = [...serviceImages, ...Object.values(devImages).map((name) => `dev-${name}`)].map(image);
  await step('bash', ['test/k8s/cluster.sh', 'load', ...images]);
}
