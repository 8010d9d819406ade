// The whole system the bench measures, started by the end-to-end harness (test/harness/launch-system.ts: run-unique
// database, NATS and Redis prefixes, every service a real process) but tuned for load: services log at warn, the
// per-key rate limit is out of the way, the SMTP relay is Postfix's smtp-sink in a process of its own (sink.ts), and
// mailer replicas can be started and stopped one by one. Mail is DKIM-signed, as production mail is: MAIL_FROM's
// domain has a key (`notifyctl domain add`) before any mailer delivers, and a scenario can take it away for a while.
import { join } from 'node:path';
import type { ServiceName, Stack } from '@notify/cli/local';
import type pg from 'pg';
import { launchSystem, type System } from '../../harness/launch-system.ts';
import type { RunResources } from '../../harness/resources.ts';
import { type BenchSink, startBenchSink } from './sink.ts';

export interface BenchTenant {
  readonly organizationId: number;
  readonly projectId: number;
  readonly apiKey: string;
}

export interface SystemUnderTestOptions {
  readonly mailerReplicas: number;
  /** Mailer replicas left running after start (the others wait for the scale-out scenario). */
  readonly runningMailers: number;
  readonly tenants: number;
  /** Extra variables for every service. */
  readonly env?: Readonly<Record<string, string>>;
  /** Template slug every tenant's project gets. */
  readonly template: string;
  /** When set, these services run under `node --cpu-prof`, writing their profiles into `<dir>/<service>/`. */
  readonly profile?: { readonly dir: string; readonly services: readonly ServiceName[] };
}

export interface SystemUnderTest {
  readonly stack: Stack;
  readonly sink: BenchSink;
  readonly db: pg.Pool;
  readonly resources: RunResources;
  readonly gatewayUrl: string;
  readonly tenants: readonly BenchTenant[];
  /** auth-svc's admin service: keys with other scopes than the tenants' own. */
  readonly authAdmin: System['authAdmin'];
  /** Starts the given mailer replicas (those not running) and waits until each is ready. */
  startMailers(indexes: readonly number[]): Promise<void>;
  /** SIGTERMs the given replicas (each finishes the jobs it holds) and waits until they have exited. */
  stopMailers(indexes: readonly number[]): Promise<void>;
  /**
   * MAIL_FROM's domain's DKIM key: `remove` makes mail go out unsigned, `add` gives the domain a new key; each restarts
   * the running mailers, which fetch MAIL_FROM's key as they start.
   */
  readonly signing: { add(): Promise<void>; remove(): Promise<void> };
  /** Every service process running now, as [label, pid]; mailer replicas share the label `mailer-svc`. */
  processes(): Array<readonly [string, number]>;
  stop(): Promise<void>;
}

/** MAIL_FROM's domain: the bench's mail is From it and signed with its DKIM key. */
const signingDomain = 'bench.notify.test';

/** High enough that no key is ever throttled (sends and status reads): the bench measures the pipeline, not the limiter's refusals. */
const unthrottledRate = '100000000/s';

export async function startSystemUnderTest(options: SystemUnderTestOptions): Promise<SystemUnderTest> {
  const profiled = (service: ServiceName): Record<string, string> =>
    options.profile?.services.includes(service)
      ? // One folder per service: Node names each file CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile, and the
        // module-hooks thread that telemetry-register starts writes a profile of its own beside the main thread's.
        { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(options.profile.dir, service)}` }
      : {};
  const system = await launchSystem({
    startSink: startBenchSink,
    mailerReplicas: options.mailerReplicas,
    // The chart's default: a default install writes an access line per request and a line per delivery attempt, and
    // what they cost belongs in its CPU per message.
    logLevel: 'info',
    output: process.env.BENCH_SERVICE_OUTPUT === 'stdout' ? undefined : null,
    env: {
      ...options.env,
      MAIL_FROM: `Notify <no-reply@${signingDomain}>`,
      NOTIFY_PUBLIC_SEND_RATE: unthrottledRate,
      NOTIFY_PUBLIC_READ_RATE: unthrottledRate,
    },
    serviceEnv: {
      gateway: profiled('gateway'),
      'auth-svc': profiled('auth-svc'),
      'dispatch-svc': profiled('dispatch-svc'),
      'mailer-svc': profiled('mailer-svc'),
      'webhook-svc': profiled('webhook-svc'),
    },
    adminDeadlineMs: 10_000,
  });
  const started = system.stack;

  const stopMailers = async (indexes: readonly number[]): Promise<void> => {
    await Promise.all(
      indexes.map(async (index) => {
        started.kill('mailer-svc', 'SIGTERM', index);
        await started.exited('mailer-svc', index);
      }),
    );
  };
  const startMailers = async (indexes: readonly number[]): Promise<void> => {
    await Promise.all(indexes.filter((index) => started.pid('mailer-svc', index) === undefined).map((index) => started.restart('mailer-svc', index)));
  };
  const restartRunningMailers = async (): Promise<void> => {
    for (let index = 0; index < options.mailerReplicas; index += 1)
      if (started.pid('mailer-svc', index) !== undefined) await started.restart('mailer-svc', index);
  };
  let signingOrganization = 0;
  const signing = {
    async add() {
      await system.notifyctlOk('domain', 'add', '--org', String(signingOrganization), '--domain', signingDomain, '--selector', 'bench');
      await restartRunningMailers();
    },
    async remove() {
      await system.notifyctlOk('domain', 'remove', '--org', String(signingOrganization), '--domain', signingDomain);
      await restartRunningMailers();
    },
  };
  let stopped: Promise<void> | undefined;
  // Once only: the normal end of the bench and an interrupt (Ctrl-C, the time limit) may both ask.
  const teardown = (): Promise<void> => (stopped ??= system.stop());
  let tenants: BenchTenant[];
  try {
    await stopMailers(Array.from({ length: options.mailerReplicas - options.runningMailers }, (_, offset) => options.runningMailers + offset));
    tenants = await createTenants(system, options.tenants, options.template);
    signingOrganization = tenants[0]?.organizationId ?? 0;
    await signing.add();
  } catch (error) {
    await teardown();
    throw error;
  }

  return {
    stack: started,
    sink: system.sink,
    db: system.db,
    resources: system.resources,
    gatewayUrl: system.gatewayUrl,
    tenants,
    authAdmin: system.authAdmin,
    startMailers,
    stopMailers,
    signing,
    processes() {
      const list: Array<readonly [string, number]> = [];
      for (const service of ['gateway', 'auth-svc', 'dispatch-svc', 'webhook-svc'] as const) {
        const pid = started.pid(service);
        if (pid !== undefined) list.push([service, pid]);
      }
      for (let index = 0; index < options.mailerReplicas; index += 1) {
        const pid = started.pid('mailer-svc', index);
        if (pid !== undefined) list.push(['mailer-svc', pid]);
      }
      return list;
    },
    stop: teardown,
  };
}

/** One organization, plan, project, API key and active template per tenant, created a few at a time. */
async function createTenants(system: Pick<System, 'createTenant' | 'putTemplate' | 'resources'>, count: number, template: string): Promise<BenchTenant[]> {
  const createOne = async (index: number): Promise<BenchTenant> => {
    const { organizationId, projectId, apiKey } = await system.createTenant(`bench-${system.resources.runId}-${index}`);
    await system.putTemplate(projectId, template, {
      subject: 'Hello {{ name }}',
      html: '<p>Hello {{ name }}, your code is <b>{{ code }}</b>.</p>',
      text: 'Hello {{ name }}, your code is {{ code }}.',
    });
    return { organizationId, projectId, apiKey };
  };
  const tenants: BenchTenant[] = [];
  for (let first = 0; first < count; first += 10) {
    tenants.push(...(await Promise.all(Array.from({ length: Math.min(10, count - first) }, (_, offset) => createOne(first + offset)))));
  }
  return tenants;
}
