// `npm start`: the whole system on this machine (infrastructure, database, SMTP sink, every service, a demo tenant),
// in the foreground until Ctrl-C, which stops the services in order and exits 0.
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoSendRequest, readyMessage } from './instructions.ts';
import { type Launched, launch } from './launch.ts';

const rootDir = fileURLToPath(new URL('../../../', import.meta.url));
const dataDir = join(rootDir, '.data');

let launched: Launched | undefined;
let stopping = false;

function stopAndExit(): void {
  if (!launched) return;
  launched.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`npm start: stopping failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // npm forwards the terminal's Ctrl-C too, so the same stop can be asked for twice: once is enough.
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the services, gateway first...\n`);
    stopAndExit();
  });
}

try {
  launched = await launch({
    dataDir,
    rootDir,
    output: process.stdout,
    smtpPort: 2525,
    mailerReplicas: 2,
    ports: { gateway: 8080, auth: 50051, dispatch: 50052, metrics: { auth: 9464, dispatch: 9465, gateway: 9466, mailer: [9467, 9468] } },
    // Tuning variables from the shell (NOTIFY_PUBLIC_SEND_RATE, MAILER_CONCURRENCY, LOG_LEVEL...) reach the services.
    // Webhooks may go to this machine over plain http (`notifyctl webhook listen`) unless the shell says otherwise.
    env: { NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true', ...process.env },
    logLevel: process.env.LOG_LEVEL ?? 'info',
  });
} catch (error) {
  process.stderr.write(`npm start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

if (stopping) {
  stopAndExit();
} else {
  const { stack, tenant, mailDir } = launched;
  process.stdout.write(
    readyMessage({
      request: demoSendRequest(stack.env.GATEWAY_URL, tenant),
      env: stack.env,
      mailDir: relative(process.cwd(), mailDir) || mailDir,
      projectId: tenant.projectId,
    }),
  );
}
