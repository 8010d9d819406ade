// The whole system for an end-to-end suite: run-unique resources, an SMTP sink, every service as a real process,
// and the clients a test needs to arrange tenants and observe outcomes (launch-system.ts), with the suites' defaults:
// quick mailer retries, the TEST_* log level and output, and the services' own account printed under a failed test.
import { afterEach } from 'node:test';
import { type SinkEnvelope, type SinkReply, type Stack, type StackOptions, startSmtpSink } from '@notify/cli/local';
import { testEnvironment } from './environment.ts';
import { launchSystem, type System } from './launch-system.ts';
import { silentLogger } from './logger.ts';

export type { HttpResult, System, Tenant } from './launch-system.ts';

export interface SystemOptions {
  mailerReplicas?: number;
  /** Extra variables for every service. */
  env?: Record<string, string>;
  serviceEnv?: StackOptions['serviceEnv'];
  grpcTls?: StackOptions['grpcTls'];
  /** How the SMTP sink answers each recipient (default: accept). */
  smtpReply?: (envelope: SinkEnvelope) => SinkReply | undefined | Promise<SinkReply | undefined>;
}

/** Systems started by this test file and not yet stopped. */
const running = new Set<Stack>();

/** What the services said at warn level or above, their own crash output, and their exits: the last `limit` lines. */
export function serviceTrouble(stack: Stack, limit = 40): string {
  const lines = stack.logs
    .lines()
    .filter((line) => !line.text.startsWith('{') || /"level":"(?:warn|error|fatal)"/.test(line.text))
    .slice(-limit);
  return lines.map((line) => `${line.source} | ${line.text}`).join('\n');
}

// When a test fails, the services' own account of it is printed under it: in CI the output is all there is to go on.
afterEach((t) => {
  if (!('passed' in t) || t.passed) return;
  for (const stack of running) console.log(`services' warnings and errors up to the failure of "${t.name}":\n${serviceTrouble(stack) || '(none)'}`);
});

/** While a group of suites shares one (shareDefaultSystem): the system startSystem() without options returns. */
let sharedDefault: Promise<System> | undefined;
let sharing = false;

/**
 * For a file that runs several suites in turn (test/e2e/default-system.test.ts): from now on, startSystem() without
 * options returns one system, started at its first call, whose stop() leaves it running for the next suite. The
 * function returned stops it.
 */
export function shareDefaultSystem(): () => Promise<void> {
  sharing = true;
  return async () => {
    sharing = false;
    const system = await sharedDefault;
    sharedDefault = undefined;
    await system?.stop();
  };
}

export async function startSystem(options: SystemOptions = {}): Promise<System> {
  if (!sharing || Object.keys(options).length > 0) return startOwnSystem(options);
  sharedDefault ??= startOwnSystem(options);
  return { ...(await sharedDefault), stop: async () => undefined };
}

async function startOwnSystem(options: SystemOptions): Promise<System> {
  const system = await launchSystem({
    startSink: (dir) =>
      startSmtpSink({ host: '127.0.0.1', port: 0, dir, logger: silentLogger('smtp-sink'), ...(options.smtpReply ? { reply: options.smtpReply } : {}) }),
    mailerReplicas: options.mailerReplicas ?? 1,
    logLevel: testEnvironment.serviceLogLevel,
    output: testEnvironment.serviceOutputShown ? undefined : null,
    env: { MAILER_RETRY_BASE: '200ms', MAILER_RETRY_MAX: '1s', ...options.env },
    ...(options.serviceEnv ? { serviceEnv: options.serviceEnv } : {}),
    ...(options.grpcTls ? { grpcTls: options.grpcTls } : {}),
  });
  running.add(system.stack);
  return {
    ...system,
    async stop() {
      await system.stop();
      running.delete(system.stack);
    },
  };
}
