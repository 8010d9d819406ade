// Everything `npm start` does, parameterized so a test can run it on private resources: infrastructure, database and
// migrations, the SMTP sink, the services, and the demo tenant.
import { join } from 'node:path';
import { createLogger } from '@notify/platform';
import { migrate } from '@notify/platform/database';
import { databaseUrl, ensureDatabase } from './database.ts';
import { loadDevSecrets } from './dev-secrets.ts';
import { ensureInfrastructure, type Reporter } from './infrastructure.ts';
import { type OutputTarget, PrefixedOutput } from './prefixed-output.ts';
import type { Endpoint } from './probes.ts';
import { type DemoTenant, seedDemo } from './seed.ts';
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts';
import { type Stack, type StackPortOptions, startStack } from './stack.ts';

export interface LaunchOptions {
  /** The checkout's `.data/`: tokens, demo key, mail, and any infrastructure started here. */
  dataDir: string;
  /** Where everything is printed; null keeps service output in the stack's logs only. */
  output: OutputTarget | null;
  /** Default postgres://postgres@127.0.0.1:5432/postgres (trust authentication). */
  postgresAdminUrl?: string;
  /** Default `notify`. */
  databaseName?: string;
  natsUrl?: string;
  natsPrefix?: string;
  redisUrl?: string;
  redisPrefix?: string;
  /** SMTP sink port on 127.0.0.1; default 2525, 0 picks a free one. */
  smtpPort?: number;
  ports?: StackPortOptions;
  mailerReplicas?: number;
  logLevel?: string;
  /** Extra variables for every service (see StackOptions.env). */
  env?: Readonly<Record<string, string | undefined>>;
  rootDir?: string;
}

export interface Launched {
  readonly stack: Stack;
  readonly sink: SmtpSink;
  readonly tenant: DemoTenant;
  readonly mailDir: string;
  /** Stops the services (in order), then the sink. */
  stop(): Promise<void>;
}

function endpoint(url: string, defaultPort: number): Endpoint {
  const parsed = new URL(url);
  return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || defaultPort) };
}

/** Lines of the launcher itself, interleaved with the services' under the same kind of prefix. */
export function launcherReporter(output: PrefixedOutput): Reporter {
  return {
    info: (message) => output.line('notify', message),
    warn: (message) => output.line('notify', `warning: ${message}`),
  };
}

export async function launch(options: LaunchOptions): Promise<Launched> {
  const output = new PrefixedOutput({ target: options.output, width: 12 });
  const reporter = launcherReporter(output);
  const adminUrl = options.postgresAdminUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const natsUrl = options.natsUrl ?? 'nats://127.0.0.1:4222';
  const redisUrl = options.redisUrl ?? 'redis://127.0.0.1:6379';

  await ensureInfrastructure({
    dataDir: options.dataDir,
    logger: reporter,
    endpoints: { postgres: endpoint(adminUrl, 5432), redis: endpoint(redisUrl, 6379), nats: endpoint(natsUrl.split(',')[0] ?? natsUrl, 4222) },
  });

  const databaseName = options.databaseName ?? 'notify';
  if (await ensureDatabase(adminUrl, databaseName)) reporter.info(`database ${databaseName}: created`);
  const url = databaseUrl(adminUrl, databaseName);
  const applied = await migrate(url, createLogger('migrate', 'warn', { write: (text: string) => output.line('migrate', text.trimEnd()) }));
  reporter.info(applied.length > 0 ? `database ${databaseName}: applied ${applied.join(', ')}` : `database ${databaseName}: schema up to date`);

  const mailDir = join(options.dataDir, 'mail');
  const sink = await startSmtpSink({
    host: '127.0.0.1',
    port: options.smtpPort ?? 2525,
    dir: mailDir,
    logger: createLogger('smtp-sink', 'info', { write: (text: string) => output.line('smtp-sink', text.trimEnd()) }),
  });
  reporter.info(`SMTP sink: listening on 127.0.0.1:${sink.port}, storing mail in ${mailDir}`);

  let stack: Stack;
  try {
    const secrets = await loadDevSecrets(join(options.dataDir, 'dev-secrets.json'));
    reporter.info('starting auth-svc and dispatch-svc, then the mailers, the webhook sender and the bounce receiver, then the gateway');
    stack = await startStack({
      databaseUrl: url,
      gatewayToken: secrets.gatewayToken,
      mailerToken: secrets.mailerToken,
      bounceToken: secrets.bounceToken,
      adminToken: secrets.adminToken,
      dataKey: secrets.dataKey,
      natsUrl,
      redisUrl,
      smtpUrl: `smtp://127.0.0.1:${sink.port}`,
      output: options.output,
      natsPrefix: options.natsPrefix,
      redisPrefix: options.redisPrefix,
      ports: options.ports,
      mailerReplicas: options.mailerReplicas,
      logLevel: options.logLevel,
      env: options.env,
      rootDir: options.rootDir,
    });
  } catch (error) {
    await sink.close();
    throw error;
  }

  const stop = async (): Promise<void> => {
    await stack.stop();
    await sink.close();
  };
  try {
    const tenant = await seedDemo({
      authAddress: stack.env.AUTH_SVC_ADDR,
      dispatchAddress: stack.env.DISPATCH_SVC_ADDR,
      adminToken: stack.env.ADMIN_TOKEN,
      keyFile: join(options.dataDir, 'demo-api-key'),
      logger: reporter,
    });
    return { stack, sink, tenant, mailDir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
