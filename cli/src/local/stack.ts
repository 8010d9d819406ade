// The whole Notify system as real child processes on this machine: auth-svc and dispatch-svc, then the mailer
// replicas, the webhook sender and the bounce receiver, then the gateway, each started only when what it depends on answers /readyz. Used by `npm start` and by
// the end-to-end suites, which also need to kill, pause and restart single services.
import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reservePorts } from './ports.ts';
import { type LogLine, type OutputTarget, PrefixedOutput } from './prefixed-output.ts';
import { type ExitInfo, ServiceProcess } from './service-process.ts';

export type ServiceName = 'auth-svc' | 'dispatch-svc' | 'mailer-svc' | 'webhook-svc' | 'bounce-svc' | 'gateway';

export interface StackPorts {
  /** Public HTTP API. */
  readonly gateway: number;
  /** gRPC. */
  readonly auth: number;
  readonly dispatch: number;
  /** bounce-svc's SMTP listener (where bounce, complaint and unsubscribe reports are delivered). */
  readonly bounceSmtp: number;
  /** Ops listeners (/metrics, /healthz, /readyz), one per process. */
  readonly metrics: {
    readonly auth: number;
    readonly dispatch: number;
    readonly gateway: number;
    readonly webhook: number;
    readonly bounce: number;
    readonly mailer: readonly number[];
  };
}

export interface StackPortOptions {
  gateway?: number;
  auth?: number;
  dispatch?: number;
  bounceSmtp?: number;
  metrics?: { auth?: number; dispatch?: number; gateway?: number; webhook?: number; bounce?: number; mailer?: readonly number[] };
}

export interface StackOptions {
  /** Migrated database the services use. */
  databaseUrl: string;
  /** One token per calling component: the gateway, the mailers, bounce-svc and notifyctl (admin). */
  gatewayToken: string;
  mailerToken: string;
  bounceToken: string;
  adminToken: string;
  /**
   * PEM files of TLS between the services: auth-svc and dispatch-svc serve `cert`/`key`, every client verifies them
   * with `ca`. Default plaintext.
   */
  grpcTls?: { readonly ca: string; readonly cert: string; readonly key: string };
  /** NOTIFY_DATA_KEY (base64 or hex, at least 32 bytes); default a new random one for this stack. */
  dataKey?: string;
  /** BOUNCE_DOMAIN of the return paths; default bounces.notify.localhost. */
  bounceDomain?: string;
  /** Default nats://127.0.0.1:4222. */
  natsUrl?: string;
  /** Stream, subject and consumer prefix (NOTIFY_NATS_PREFIX); default none. */
  natsPrefix?: string;
  /** Default redis://127.0.0.1:6379. */
  redisUrl?: string;
  /** REDIS_KEY_PREFIX; default `notify:`. */
  redisPrefix?: string;
  /** Where mailers deliver; default smtp://127.0.0.1:2525. */
  smtpUrl?: string;
  /** Default 1. */
  mailerReplicas?: number;
  /** Ports wanted; absent or 0 picks a free one. */
  ports?: StackPortOptions;
  /** LOG_LEVEL of every service; default info. */
  logLevel?: string;
  /**
   * Extra variables for every service (e.g. NOTIFY_PUBLIC_SEND_RATE). Only PATH, HOME, LANG, TZ, TMPDIR and OTEL_*
   * are inherited from this process, so a test's services do not depend on the shell they were started from.
   * Variables the stack sets itself (ports, addresses, tokens, URLs, prefixes) cannot be overridden here.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** Extra variables for one service only. */
  serviceEnv?: Partial<Record<ServiceName, Readonly<Record<string, string>>>>;
  /** Where service output goes; default process.stdout; null keeps it in `logs` only. */
  output?: OutputTarget | null;
  /** Repository root (cwd of the services); default this checkout's. */
  rootDir?: string;
  /** Time each service has to answer /readyz; default 30 s. */
  readyTimeoutMs?: number;
  /** Time each service has to exit after SIGTERM before SIGKILL; default 20 s. */
  stopTimeoutMs?: number;
}

/** What a client of the stack (notifyctl, a test) needs to reach it. */
export type StackEnvironment = {
  readonly GATEWAY_URL: string;
  readonly AUTH_SVC_ADDR: string;
  readonly DISPATCH_SVC_ADDR: string;
  readonly ADMIN_TOKEN: string;
  readonly GATEWAY_TOKEN: string;
  readonly MAILER_TOKEN: string;
  readonly BOUNCE_TOKEN: string;
  /** The CA a client of auth-svc and dispatch-svc verifies them with; empty when they serve plaintext. */
  readonly GRPC_TLS_CA_FILE: string;
  readonly DATABASE_URL: string;
  readonly NATS_URL: string;
  readonly NOTIFY_NATS_PREFIX: string;
  readonly REDIS_URL: string;
  readonly REDIS_KEY_PREFIX: string;
  readonly SMTP_URL: string;
  /** The key return paths and unsubscribe links are signed with, so a client can mint them as the mailers do. */
  readonly NOTIFY_DATA_KEY: string;
  readonly BOUNCE_DOMAIN: string;
  /** bounce-svc's SMTP port on 127.0.0.1, where reports are delivered. */
  readonly BOUNCE_SMTP_PORT: string;
};

export interface StackLogs {
  /** Kept lines, oldest first: every process, or one (`mailer-svc-1`, `gateway`, ...). */
  lines(source?: string): readonly LogLine[];
  /** The same as text, for printing when a test fails. */
  text(source?: string): string;
}

export interface Stack {
  readonly ports: StackPorts;
  readonly env: StackEnvironment;
  readonly logs: StackLogs;
  /** The full environment one process runs with. */
  serviceEnv(service: ServiceName, index?: number): Readonly<Record<string, string>>;
  pid(service: ServiceName, index?: number): number | undefined;
  /** Sends a signal (SIGKILL, SIGTERM, SIGSTOP, SIGCONT, ...) to one process; `index` picks a mailer replica. */
  kill(service: ServiceName, signal?: NodeJS.Signals, index?: number): void;
  /** Resolves when that process has exited (at once if it is not running). */
  exited(service: ServiceName, index?: number): Promise<ExitInfo>;
  /** Stops the process if it runs, starts it again on the same ports (with `env` merged in, if given), waits until ready. */
  restart(service: ServiceName, index?: number, env?: Readonly<Record<string, string>>): Promise<void>;
  /** SIGTERM every process, gateway first and auth-svc last, waiting for each; SIGKILL after the stop timeout. */
  stop(): Promise<void>;
}

const defaultRoot = fileURLToPath(new URL('../../../', import.meta.url));
const inherited = /^(PATH|HOME|LANG|LC_[A-Z]+|TZ|TMPDIR|OTEL_[A-Z0-9_]+)$/;

/**
 * Where Node keeps the code it compiled, reused by every later start of a process on this machine (a quarter less CPU
 * per service start): the user's cache directory, outside any clone, unless NODE_COMPILE_CACHE names another.
 */
export const nodeCompileCache = process.env.NODE_COMPILE_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'notify', 'node-compile-cache');

function pickInherited(env: NodeJS.ProcessEnv): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && inherited.test(name)) picked[name] = value;
  return picked;
}

function defined(env: Readonly<Record<string, string | undefined>> | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env ?? {})) if (value !== undefined) result[name] = value;
  return result;
}

async function choosePorts(wanted: StackPortOptions, mailers: number): Promise<StackPorts> {
  const mailerPorts = Array.from({ length: mailers }, (_, index) => ({ name: `mailer-svc-${index} metrics`, port: wanted.metrics?.mailer?.[index] ?? 0 }));
  const [gateway, auth, dispatch, bounceSmtp, authMetrics, dispatchMetrics, gatewayMetrics, webhookMetrics, bounceMetrics, ...mailer] = await reservePorts([
    { name: 'gateway HTTP', port: wanted.gateway ?? 0 },
    { name: 'auth-svc gRPC', port: wanted.auth ?? 0 },
    { name: 'dispatch-svc gRPC', port: wanted.dispatch ?? 0 },
    { name: 'bounce-svc SMTP', port: wanted.bounceSmtp ?? 0 },
    { name: 'auth-svc metrics', port: wanted.metrics?.auth ?? 0 },
    { name: 'dispatch-svc metrics', port: wanted.metrics?.dispatch ?? 0 },
    { name: 'gateway metrics', port: wanted.metrics?.gateway ?? 0 },
    { name: 'webhook-svc metrics', port: wanted.metrics?.webhook ?? 0 },
    { name: 'bounce-svc metrics', port: wanted.metrics?.bounce ?? 0 },
    ...mailerPorts,
  ]);
  return {
    gateway: gateway as number,
    auth: auth as number,
    dispatch: dispatch as number,
    bounceSmtp: bounceSmtp as number,
    metrics: {
      auth: authMetrics as number,
      dispatch: dispatchMetrics as number,
      gateway: gatewayMetrics as number,
      webhook: webhookMetrics as number,
      bounce: bounceMetrics as number,
      mailer,
    },
  };
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const mailers = options.mailerReplicas ?? 1;
  if (!Number.isInteger(mailers) || mailers < 1) throw new Error(`mailerReplicas must be a positive integer, got ${mailers}`);
  const ports = await choosePorts(options.ports ?? {}, mailers);
  const stack = new LocalStack(options, ports, stackEnvironment(options, ports));
  await stack.start();
  return stack;
}

function stackEnvironment(options: StackOptions, ports: StackPorts): StackEnvironment {
  return {
    GATEWAY_URL: `http://127.0.0.1:${ports.gateway}`,
    AUTH_SVC_ADDR: `127.0.0.1:${ports.auth}`,
    DISPATCH_SVC_ADDR: `127.0.0.1:${ports.dispatch}`,
    ADMIN_TOKEN: options.adminToken,
    GATEWAY_TOKEN: options.gatewayToken,
    MAILER_TOKEN: options.mailerToken,
    BOUNCE_TOKEN: options.bounceToken,
    GRPC_TLS_CA_FILE: options.grpcTls?.ca ?? '',
    DATABASE_URL: options.databaseUrl,
    NATS_URL: options.natsUrl ?? 'nats://127.0.0.1:4222',
    NOTIFY_NATS_PREFIX: options.natsPrefix ?? '',
    REDIS_URL: options.redisUrl ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: options.redisPrefix ?? 'notify:',
    SMTP_URL: options.smtpUrl ?? 'smtp://127.0.0.1:2525',
    NOTIFY_DATA_KEY: options.dataKey ?? randomBytes(32).toString('base64'),
    BOUNCE_DOMAIN: options.bounceDomain ?? 'bounces.notify.localhost',
    BOUNCE_SMTP_PORT: String(ports.bounceSmtp),
  };
}

/** The variables each service is given by the stack itself, beside METRICS_PORT: each caller gets only its own token, the servers every token they accept. */
function ownEnvironments(env: StackEnvironment, options: StackOptions, ports: StackPorts): Record<ServiceName, Record<string, string>> {
  const nats = { NATS_URL: env.NATS_URL, NOTIFY_NATS_PREFIX: env.NOTIFY_NATS_PREFIX };
  const dataKey = { NOTIFY_DATA_KEY: env.NOTIFY_DATA_KEY };
  const gatewayToken = { GATEWAY_TOKEN: env.GATEWAY_TOKEN };
  const adminToken = { ADMIN_TOKEN: env.ADMIN_TOKEN };
  const grpcServerTls = { GRPC_TLS_CERT_FILE: options.grpcTls?.cert ?? '', GRPC_TLS_KEY_FILE: options.grpcTls?.key ?? '' };
  const grpcClientTls = { GRPC_TLS_CA_FILE: env.GRPC_TLS_CA_FILE };
  return {
    'auth-svc': { GRPC_PORT: String(ports.auth), DATABASE_URL: env.DATABASE_URL, ...nats, ...gatewayToken, ...adminToken, ...grpcServerTls },
    'dispatch-svc': {
      GRPC_PORT: String(ports.dispatch),
      DATABASE_URL: env.DATABASE_URL,
      ...nats,
      ...gatewayToken,
      MAILER_TOKEN: env.MAILER_TOKEN,
      BOUNCE_TOKEN: env.BOUNCE_TOKEN,
      ...adminToken,
      ...dataKey,
      ...grpcServerTls,
    },
    // The mailers ask dispatch-svc's SigningKeyService for DKIM keys; bounce-svc calls its ReportService.
    'mailer-svc': {
      ...nats,
      SMTP_URL: env.SMTP_URL,
      ...dataKey,
      BOUNCE_DOMAIN: env.BOUNCE_DOMAIN,
      NOTIFY_PUBLIC_URL: env.GATEWAY_URL,
      DISPATCH_SVC_ADDR: env.DISPATCH_SVC_ADDR,
      MAILER_TOKEN: env.MAILER_TOKEN,
      ...grpcClientTls,
    },
    'webhook-svc': { DATABASE_URL: env.DATABASE_URL, ...nats, ...dataKey },
    'bounce-svc': {
      ...dataKey,
      BOUNCE_DOMAIN: env.BOUNCE_DOMAIN,
      BOUNCE_SMTP_PORT: env.BOUNCE_SMTP_PORT,
      BOUNCE_SMTP_HOST: '127.0.0.1',
      DISPATCH_SVC_ADDR: env.DISPATCH_SVC_ADDR,
      BOUNCE_TOKEN: env.BOUNCE_TOKEN,
      ...grpcClientTls,
    },
    gateway: {
      HTTP_PORT: String(ports.gateway),
      AUTH_SVC_ADDR: env.AUTH_SVC_ADDR,
      DISPATCH_SVC_ADDR: env.DISPATCH_SVC_ADDR,
      ...gatewayToken,
      ...grpcClientTls,
      REDIS_URL: env.REDIS_URL,
      REDIS_KEY_PREFIX: env.REDIS_KEY_PREFIX,
      // auth-svc's key revocations and plan changes, which keep the gateway's authorization cache honest.
      ...nats,
    },
  };
}

/** The services as child processes of this one, started in stages and stopped in the reverse order. */
class LocalStack implements Stack {
  readonly ports: StackPorts;
  readonly env: StackEnvironment;
  readonly logs: StackLogs;
  readonly #readyTimeoutMs: number;
  readonly #stopTimeoutMs: number;
  readonly #processes: Record<ServiceName, ServiceProcess[]>;
  /** Each stage depends on the ones before it; processes within a stage start together. */
  readonly #stages: ServiceProcess[][];
  #stopped: Promise<void> | undefined;
  /** If this process dies without stopping the stack, its children must not outlive it. */
  readonly #killAll = (): void => {
    for (const child of this.#stages.flat()) child.killNow();
  };

  constructor(options: StackOptions, ports: StackPorts, env: StackEnvironment) {
    this.ports = ports;
    this.env = env;
    this.#readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 20_000;
    const labels = ['auth-svc', 'dispatch-svc', 'webhook-svc', 'bounce-svc', 'gateway', ...ports.metrics.mailer.map((_, index) => `mailer-svc-${index}`)];
    const output = new PrefixedOutput({
      target: options.output === undefined ? process.stdout : options.output,
      width: Math.max(...labels.map((label) => label.length)),
    });
    this.logs = { lines: (source) => output.lines(source), text: (source) => output.text(source) };
    const own = ownEnvironments(env, options, ports);
    const base = { ...pickInherited(process.env), NODE_COMPILE_CACHE: nodeCompileCache, LOG_LEVEL: options.logLevel ?? 'info', ...defined(options.env) };
    const rootDir = options.rootDir ?? defaultRoot;
    const make = (service: ServiceName, label: string, metricsPort: number): ServiceProcess =>
      new ServiceProcess({
        label,
        dir: service,
        rootDir,
        metricsPort,
        env: { ...base, ...options.serviceEnv?.[service], ...own[service], METRICS_PORT: String(metricsPort) },
        output,
      });
    this.#processes = {
      'auth-svc': [make('auth-svc', 'auth-svc', ports.metrics.auth)],
      'dispatch-svc': [make('dispatch-svc', 'dispatch-svc', ports.metrics.dispatch)],
      'mailer-svc': ports.metrics.mailer.map((port, index) => make('mailer-svc', `mailer-svc-${index}`, port)),
      'webhook-svc': [make('webhook-svc', 'webhook-svc', ports.metrics.webhook)],
      'bounce-svc': [make('bounce-svc', 'bounce-svc', ports.metrics.bounce)],
      gateway: [make('gateway', 'gateway', ports.metrics.gateway)],
    };
    // The gateway calls auth-svc and dispatch-svc only, so it starts beside the mailers rather than after them.
    const processes = this.#processes;
    this.#stages = [
      [...processes['auth-svc'], ...processes['dispatch-svc']],
      [...processes['mailer-svc'], ...processes['webhook-svc'], ...processes['bounce-svc'], ...processes.gateway],
    ];
  }

  /** Starts the stages in order, each once the one before is ready; stops what started if one does not get ready. */
  async start(): Promise<void> {
    process.once('exit', this.#killAll);
    try {
      for (const stage of this.#stages) {
        for (const child of stage) child.start();
        await Promise.all(stage.map((child) => child.waitReady(this.#readyTimeoutMs)));
      }
    } catch (error) {
      await this.#stopAll();
      throw error;
    }
  }

  serviceEnv(service: ServiceName, index?: number): Readonly<Record<string, string>> {
    return this.#find(service, index).options.env;
  }

  pid(service: ServiceName, index?: number): number | undefined {
    return this.#find(service, index).pid;
  }

  kill(service: ServiceName, signal: NodeJS.Signals = 'SIGTERM', index?: number): void {
    this.#find(service, index).signal(signal);
  }

  exited(service: ServiceName, index?: number): Promise<ExitInfo> {
    return this.#find(service, index).exited();
  }

  async restart(service: ServiceName, index?: number, extraEnv?: Readonly<Record<string, string>>): Promise<void> {
    const child = this.#find(service, index);
    await child.stop(this.#stopTimeoutMs);
    // The stack stopped meanwhile (an interrupted bench): nothing may start after it, to outlive it.
    if (this.#stopped) throw new Error(`${service} not restarted: the stack is stopping`);
    if (extraEnv) child.options.env = { ...child.options.env, ...extraEnv };
    child.start();
    await child.waitReady(this.#readyTimeoutMs);
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#stopAll();
    return this.#stopped;
  }

  #find(service: ServiceName, index = 0): ServiceProcess {
    const child = this.#processes[service]?.[index];
    if (!child) throw new Error(`no ${service} process #${index} in this stack`);
    return child;
  }

  /** Stopped in the reverse order, the gateway first of all: no request comes in while the services behind it stop. */
  async #stopAll(): Promise<void> {
    const gateway = this.#processes.gateway;
    const stopOrder = [gateway, ...[...this.#stages].reverse().map((stage) => stage.filter((child) => !gateway.includes(child)))];
    for (const stage of stopOrder) await Promise.all(stage.map((child) => child.stop(this.#stopTimeoutMs)));
    process.off('exit', this.#killAll);
  }
}
