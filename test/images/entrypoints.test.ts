// The images without a Docker engine: what the Dockerfile says each target runs, as whom and from where, checked as
// written; then each target's filesystem laid out as its COPY steps would (see staged-image.ts) and started with
// exactly its command line against the machine's PostgreSQL, NATS and Redis (a private database and prefixes).
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../harness/database.ts';
import { freePort } from '../harness/free-port.ts';
import { dropPrefixedStreams, infrastructure } from '../harness/resources.ts';
import { waitFor } from '../harness/wait.ts';
import { commandLine, type ImageConfig, imageConfig, parseDockerfile } from './dockerfile.ts';
import { type StagedImage, stageImage } from './staged-image.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const dockerfile = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
const services = ['auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'gateway'] as const;
type Service = (typeof services)[number];
const targets = [...services, 'toolbox'] as const;

const runId = randomBytes(4).toString('hex');
/** Empty: the toolbox image's migration is under test. */
let database: TestDatabase;
const natsPrefix = `t${runId}_`;
const tokens = {
  GATEWAY_TOKEN: randomBytes(24).toString('hex'),
  MAILER_TOKEN: randomBytes(24).toString('hex'),
  BOUNCE_TOKEN: randomBytes(24).toString('hex'),
  ADMIN_TOKEN: randomBytes(24).toString('hex'),
};
/** NOTIFY_DATA_KEY of dispatch-svc, the mailers, webhook-svc and bounce-svc, as the chart generates it: 32 random bytes, base64. */
const dataKey = randomBytes(32).toString('base64');
/** Stands for the pods' /tmp emptyDir: the only place a container may write. */
const scratch = mkdtempSync(join(tmpdir(), `notify-images-${runId}-`));

const staged = new Map<string, StagedImage>();
const running: ChildProcess[] = [];

before(async () => {
  database = await createTestDatabase({ adminUrl: infrastructure.postgresAdminUrl, runId, migrated: false });
  for (const target of targets) staged.set(target, await stageImage(dockerfile, imageConfig(dockerfile, target), repoRoot));
});

after(async () => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const image of staged.values()) image.remove();
  await dropPrefixedStreams(infrastructure.natsUrl, natsPrefix);
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

function image(target: string): StagedImage {
  const found = staged.get(target);
  assert.ok(found, `${target} not staged`);
  return found;
}

/** The container's environment: the image's ENV, /tmp and HOME on the scratch folder, then the pod's variables. */
function containerEnv(config: ImageConfig, env: Record<string, string>): Record<string, string> {
  const redirect = (value: string): string => (value === '/tmp' ? scratch : value);
  const fromImage = Object.fromEntries(Object.entries(config.env).map(([name, value]) => [name, redirect(value)]));
  return { PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, ...fromImage, LOG_LEVEL: 'warn', ...env };
}

/** Starts the target's command line as its image would: `node` is the one binary on the PATH, WORKDIR the cwd. */
function start(target: string, env: Record<string, string>, argv: readonly string[] = commandLine(image(target).config)): ChildProcess {
  const { config } = image(target);
  const [binary, ...args] = argv;
  const child = spawn(binary === 'node' ? process.execPath : image(target).path(binary ?? ''), args, {
    cwd: image(target).path(config.workdir),
    env: containerEnv(config, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  Object.defineProperty(child, 'output', { get: () => output });
  running.push(child);
  return child;
}

function outputOf(child: ChildProcess): string {
  return (child as unknown as { output: string }).output;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** The first line an SMTP server sends on a new connection. */
function smtpGreeting(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(5_000, () => socket.destroy(new Error('no SMTP greeting within 5 s')));
    socket.once('error', reject);
    socket.once('data', (chunk: Buffer) => {
      socket.end('QUIT\r\n');
      resolve(chunk.toString().split('\r\n')[0] ?? '');
    });
  });
}

async function ready(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1_000) })).status === 200;
  } catch {
    return false;
  }
}

describe('container images', () => {
  test('each service image runs node itself as PID 1 with its entry point, from /app, as a numeric non-root user', () => {
    assert.match(dockerfile.args.NODE_IMAGE ?? '', /^node:24(\.\d+){0,2}-slim$/);
    for (const service of services) {
      const config = imageConfig(dockerfile, service);
      assert.deepEqual(config.shellForm, [], `${service}: a shell as PID 1 would not pass SIGTERM on`);
      assert.deepEqual(commandLine(config), ['node', '--import', '@notify/platform/telemetry-register', `${service}/src/main.ts`]);
      assert.equal(config.workdir, '/app');
      // biome-ignore lint/suspicious/noTemplateCurlyInString: `${NODE_IMAGE}` is the Dockerfile's own text (a build argument in FROM), not a template.
      assert.equal(config.chain[0]?.base, '${NODE_IMAGE}'.replace('${NODE_IMAGE}', dockerfile.args.NODE_IMAGE ?? ''));
    }
    assert.deepEqual(commandLine(imageConfig(dockerfile, 'toolbox')), ['node', 'platform/src/database/migrate-cli.ts']);
    for (const target of targets) {
      const config = imageConfig(dockerfile, target);
      assert.match(config.user, /^[1-9]\d*(:\d+)?$/, `${target} runs as ${config.user}`);
      assert.equal(config.env.NODE_ENV, 'production', target);
      assert.equal(config.env.TMPDIR, '/tmp', target);
    }
  });

  test('images install production dependencies of their own workspace only, and the service user can write nothing', () => {
    for (const target of targets) {
      const config = imageConfig(dockerfile, target);
      const workspace = target === 'toolbox' ? 'cli' : target;
      const installs = config.copies.filter((step) => step.from).map((step) => dockerfile.stages.find((stage) => stage.name === step.from));
      assert.equal(installs.length, 1, target);
      const npm = installs[0]?.instructions.find((instruction) => instruction.keyword === 'RUN')?.args ?? '';
      assert.match(npm, new RegExp(`npm ci --omit=dev --workspace ${workspace} --include-workspace-root=false --ignore-scripts$`), target);
      // Files come in owned by root: the service (uid 1000) can read its code, never change it.
      for (const step of config.copies) assert.equal(step.chown, undefined, `${target}: COPY --chown hands files to the service user`);
      // Build-time changes of the runtime image: dropping npm and its kin, linking notifyctl. Nothing writes under /app.
      for (const run of config.runs) {
        for (const command of run.command.split('&&').map((part) => part.trim())) {
          const removal = /^rm -rf ((?:\/(?:usr\/local|opt)\/\S+\s*)+)$/.exec(command);
          const link = /^ln -s \/app\/\S+ \/usr\/local\/bin\/[a-z-]+$/.exec(command);
          assert.ok(removal || link, `${target}: RUN ${command} is not an allowed change of the runtime image`);
        }
      }
    }
  });

  test('the toolbox image migrates an empty database with its default command, and again finds nothing to do', { timeout: 60_000 }, async () => {
    for (const expected of [/migrations applied/, /schema up to date/]) {
      const migrate = start('toolbox', { DATABASE_URL: database.url, LOG_LEVEL: 'info' });
      const { code } = await exited(migrate);
      assert.equal(code, 0, outputOf(migrate));
      assert.match(outputOf(migrate), expected);
    }
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const { rows } = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM pgmigrations');
    await db.end();
    assert.ok((rows[0]?.count ?? 0) >= 1);
  });

  test("notifyctl is on the toolbox image's PATH and runs", { timeout: 30_000 }, async () => {
    const help = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(
        image('toolbox').path('/usr/local/bin/notifyctl'),
        ['help'],
        { env: containerEnv(image('toolbox').config, {}), cwd: image('toolbox').path('/app') },
        (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
      ),
    );
    assert.equal(help.code, 0);
    assert.match(help.stdout, /notifyctl/);
  });

  test("every service starts from its image's command line, answers /readyz, writes nothing into its image and exits 0 on SIGTERM", {
    timeout: 120_000,
  }, async () => {
    // Each port is picked just before the stage that binds it: a free port picked long before (the gateway's, while the
    // other stages start) may meanwhile become the local end of some connection, and the bind then fails.
    const ports = { authGrpc: await freePort(), dispatchGrpc: await freePort(), http: 0, bounceSmtp: 0 };
    const metrics = {} as Record<Service, number>;
    const common = { NATS_URL: infrastructure.natsUrl, NOTIFY_NATS_PREFIX: natsPrefix, DATABASE_URL: database.url };
    // The mailers (DKIM keys) and bounce-svc (reports) call dispatch-svc, each with its own token, as the chart wires them.
    const dispatchAddress = { DISPATCH_SVC_ADDR: `dns:///127.0.0.1:${ports.dispatchGrpc}` };
    const env = (): Record<Service, Record<string, string>> => ({
      'auth-svc': { ...common, GRPC_PORT: String(ports.authGrpc), GATEWAY_TOKEN: tokens.GATEWAY_TOKEN, ADMIN_TOKEN: tokens.ADMIN_TOKEN },
      'dispatch-svc': { ...common, ...tokens, GRPC_PORT: String(ports.dispatchGrpc), NOTIFY_DATA_KEY: dataKey },
      'mailer-svc': {
        NATS_URL: infrastructure.natsUrl,
        NOTIFY_NATS_PREFIX: natsPrefix,
        SMTP_URL: 'smtp://127.0.0.1:2525',
        NOTIFY_DATA_KEY: dataKey,
        ...dispatchAddress,
        MAILER_TOKEN: tokens.MAILER_TOKEN,
      },
      'webhook-svc': { NATS_URL: infrastructure.natsUrl, NOTIFY_NATS_PREFIX: natsPrefix, DATABASE_URL: database.url, NOTIFY_DATA_KEY: dataKey },
      'bounce-svc': {
        NOTIFY_DATA_KEY: dataKey,
        BOUNCE_SMTP_PORT: String(ports.bounceSmtp),
        BOUNCE_SMTP_HOST: '127.0.0.1',
        BOUNCE_DOMAIN: 'bounces.notify.localhost',
        ...dispatchAddress,
        BOUNCE_TOKEN: tokens.BOUNCE_TOKEN,
      },
      gateway: {
        HTTP_PORT: String(ports.http),
        AUTH_SVC_ADDR: `dns:///127.0.0.1:${ports.authGrpc}`,
        DISPATCH_SVC_ADDR: `dns:///127.0.0.1:${ports.dispatchGrpc}`,
        GATEWAY_TOKEN: tokens.GATEWAY_TOKEN,
        REDIS_URL: infrastructure.redisUrl,
        REDIS_KEY_PREFIX: `notify-t-${runId}:`,
      },
    });
    const before = new Map(services.map((service) => [service, image(service).snapshot()]));
    const children = new Map<Service, ChildProcess>();
    // In dependency order, as the chart's probes would let them in.
    for (const stage of [['auth-svc', 'dispatch-svc'], ['mailer-svc', 'webhook-svc', 'bounce-svc'], ['gateway']] as Service[][]) {
      if (stage.includes('bounce-svc')) ports.bounceSmtp = await freePort();
      if (stage.includes('gateway')) ports.http = await freePort();
      for (const service of stage) {
        metrics[service] = await freePort();
        children.set(service, start(service, { ...env()[service], METRICS_PORT: String(metrics[service]) }));
      }
      for (const service of stage) {
        const child = children.get(service) as ChildProcess;
        await waitFor(
          async () => {
            if (child.exitCode !== null) throw new Error(`${service} exited ${child.exitCode}: ${outputOf(child)}`);
            return (await ready(metrics[service])) ? true : undefined;
          },
          { timeoutMs: 30_000, what: `${service} to answer /readyz` },
        ).catch((error: Error) => assert.fail(`${error.message}\n${outputOf(child)}`));
      }
    }
    const api = await fetch(`http://127.0.0.1:${ports.http}/readyz`);
    assert.equal(api.status, 200, 'the gateway reaches both gRPC services');
    assert.match(await smtpGreeting(ports.bounceSmtp), /^220 /, 'bounce-svc greets on its SMTP port');

    for (const service of [...services].reverse()) {
      const child = children.get(service) as ChildProcess;
      child.kill('SIGTERM');
      const exit = await exited(child);
      assert.deepEqual(exit, { code: 0, signal: null }, `${service} did not shut down cleanly:\n${outputOf(child)}`);
      assert.deepEqual(image(service).snapshot(), before.get(service), `${service} wrote into its image`);
    }
  });
});
