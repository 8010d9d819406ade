// A Postfix of the test's own (Debian's package, installed when missing) as a real relay: it accepts mail on a
// loopback port, delivers each recipient domain to the SMTP server the test names, and writes the bounces (RFC 3464
// DSNs) that a real MTA writes when the next hop refuses a recipient after the message was accepted. Its config,
// queue, data and log live in one temporary directory; the machine's own Postfix (if any) is never touched.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { freePort } from './free-port.ts';

/** An SMTP server Postfix hands mail to, as host and port (no MX lookup: the host is used as it is). */
export interface SmtpRoute {
  readonly host: string;
  readonly port: number;
}

export interface PrivatePostfixOptions {
  /**
   * Next hop per recipient domain (exact domain, no subdomains), for example the "far" relay that refuses a
   * recipient for `example.test` and the bounce receiver for the VERP domain, where Postfix's DSNs go.
   */
  readonly routes: Readonly<Record<string, SmtpRoute>>;
  /** Next hop for every other domain. Without one, Postfix refuses other recipients at RCPT (554 5.7.1). */
  readonly defaultRoute?: SmtpRoute;
  /** The name Postfix gives itself (HELO, Received:, MAILER-DAEMON@...). Default postfix.notify.test. */
  readonly hostname?: string;
  /** Further main.cf parameters, set last (they override the defaults below). */
  readonly settings?: Readonly<Record<string, string>>;
}

export interface PrivatePostfix {
  readonly host: '127.0.0.1';
  /** Port of its smtpd on 127.0.0.1. */
  readonly port: number;
  /** Its config (config/), queue (queue/), data (data/) and maillog, for `postqueue -c <directory>/config -p`. */
  readonly directory: string;
  /** Its maillog so far (every daemon's lines), for failure messages. */
  log(): string;
  /** Stops Postfix, waits for its master to exit and removes its directory. */
  stop(): Promise<void>;
}

const systemDirectories = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function findProgram(name: string): string | undefined {
  const directories = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...systemDirectories];
  return directories.map((directory) => join(directory, name)).find((path) => existsSync(path));
}

function run(
  command: string,
  args: readonly string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env, timeout: options.timeoutMs ?? 300_000 });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output }));
    child.stdin.end(options.input ?? '');
  });
}

const isRoot = process.getuid?.() === 0;
let installing: Promise<string> | undefined;

/**
 * Path of the `postfix` program, installing Debian's package first when it is missing (as root, or with sudo -n).
 * The package is told to write no configuration, so installing it starts no mail system of the machine's own; no
 * init system is needed. Concurrent callers in one process share one installation.
 */
export function ensurePostfix(): Promise<string> {
  const found = findProgram('postfix');
  if (found) return Promise.resolve(found);
  installing ??= install().finally(() => (installing = undefined));
  return installing;
}

async function install(): Promise<string> {
  const sudo = isRoot ? [] : ['sudo', '-n'];
  if (!isRoot && !findProgram('sudo')) throw new Error('postfix is not installed; as root: apt-get install -y --no-install-recommends postfix');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const step = async (args: readonly string[], input?: string): Promise<{ code: number; output: string }> => {
    const [command, ...rest] = [...sudo, ...args] as [string, ...string[]];
    return run(command, rest, { env, ...(input === undefined ? {} : { input }) });
  };
  const must = async (args: readonly string[], input?: string): Promise<void> => {
    const result = await step(args, input);
    if (result.code !== 0) throw new Error(`${args.join(' ')} exited with code ${result.code}:\n${result.output}`);
  };
  // "No configuration": the package writes no main.cf and so starts no instance of its own.
  await must(['debconf-set-selections'], 'postfix postfix/main_mailer_type select No configuration\n');
  // Wait for a dpkg lock another installation holds, rather than fail on it.
  const installArgs = ['apt-get', '-o', 'DPkg::Lock::Timeout=300', 'install', '-y', '--no-install-recommends', 'postfix'];
  const first = await step(installArgs);
  if (first.code !== 0) {
    // Usually stale package lists (a fresh container has none): refresh them once and try again.
    await must(['apt-get', '-o', 'DPkg::Lock::Timeout=300', 'update']);
    await must(installArgs);
  }
  const installed = findProgram('postfix');
  if (!installed) throw new Error('apt-get installed postfix but no postfix program is on the PATH');
  return installed;
}

/** Whether something on 127.0.0.1:port greets like an SMTP server (220). */
function greets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (answer: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), 1_000);
    socket.once('data', (chunk: Buffer) => done(chunk.toString('latin1').startsWith('220')));
    socket.once('error', () => done(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** inline: tables take `{ key = value }` pairs; values here are transport specs without spaces or braces. */
function inlineTable(entries: readonly (readonly [string, string])[]): string {
  return `inline:{ ${entries.map(([key, value]) => `{ ${key} = ${value} }`).join(', ')} }`;
}

function nextHop(route: SmtpRoute): string {
  if (!/^[A-Za-z0-9.:-]+$/.test(route.host) || !Number.isInteger(route.port) || route.port <= 0 || route.port > 65_535) {
    throw new Error(`not a usable SMTP route: ${route.host}:${route.port}`);
  }
  return `smtp:[${route.host}]:${route.port}`;
}

function mainCf(dir: string, port: number, compatibilityLevel: string, options: PrivatePostfixOptions): string {
  const domains = Object.keys(options.routes);
  if (domains.length === 0 && !options.defaultRoute) throw new Error('a private Postfix needs at least one route');
  for (const domain of domains) if (!/^[a-z0-9.-]+$/i.test(domain)) throw new Error(`not a domain: ${domain}`);
  const settings: Record<string, string> = {
    compatibility_level: compatibilityLevel,
    queue_directory: join(dir, 'queue'),
    data_directory: join(dir, 'data'),
    maillog_file: join(dir, 'maillog'),
    maillog_file_prefixes: dir,
    syslog_name: `notify-test-postfix-${port}`,
    myhostname: options.hostname ?? 'postfix.notify.test',
    myorigin: '$myhostname',
    inet_interfaces: 'loopback-only',
    inet_protocols: 'ipv4',
    // Nothing is delivered here: no local domains, no aliases, no local mailboxes.
    mydestination: '',
    local_transport: 'error:5.1.1 local delivery is disabled',
    alias_maps: '',
    alias_database: '',
    biff: 'no',
    mynetworks: '127.0.0.0/8',
    smtpd_relay_restrictions: 'permit_mynetworks, reject',
    smtpd_recipient_restrictions: options.defaultRoute
      ? 'permit_mynetworks, reject'
      : `check_recipient_access ${inlineTable(domains.map((domain) => [domain, 'OK']))}, reject`,
    transport_maps: domains.length > 0 ? inlineTable(domains.map((domain) => [domain, nextHop(options.routes[domain]!)])) : '',
    default_transport: options.defaultRoute ? nextHop(options.defaultRoute) : 'error:5.1.2 no route for this domain in the test Postfix',
    relayhost: '',
    // The test's servers speak plain SMTP on loopback, and there is no DNS to ask.
    smtp_tls_security_level: 'none',
    smtpd_tls_security_level: 'none',
    smtp_host_lookup: 'native',
    smtpd_peername_lookup: 'no',
    smtp_connect_timeout: '5s',
    // Short timers: a deferred message is retried within seconds and gives up within minutes, not days.
    queue_run_delay: '1s',
    minimal_backoff_time: '1s',
    maximal_backoff_time: '5s',
    maximal_queue_lifetime: '10m',
    bounce_queue_lifetime: '10m',
    delay_warning_time: '0h',
    ...options.settings,
  };
  return `${Object.entries(settings)
    .map(([name, value]) => `${name} = ${value}`)
    .join('\n')}\n`;
}

/** Only the services a relay needs, none chrooted (the queue is a temporary directory, not /var/spool/postfix). */
function masterCf(port: number): string {
  return `${[
    `127.0.0.1:${port} inet n - n - - smtpd`,
    'pickup unix n - n 60 1 pickup',
    'cleanup unix n - n - 0 cleanup',
    'qmgr unix n - n 300 1 qmgr',
    'rewrite unix - - n - - trivial-rewrite',
    'bounce unix - - n - 0 bounce',
    'defer unix - - n - 0 bounce',
    'trace unix - - n - 0 bounce',
    'verify unix - - n - 1 verify',
    'flush unix n - n 1000? 0 flush',
    'proxymap unix - - n - - proxymap',
    'smtp unix - - n - - smtp',
    'showq unix n - n - - showq',
    'error unix - - n - - error',
    'retry unix - - n - - error',
    'discard unix - - n - - discard',
    'anvil unix - - n - 1 anvil',
    'scache unix - - n - 1 scache',
    'postlog unix-dgram n - n - 1 postlogd',
  ].join('\n')}\n`;
}

/** Starts a Postfix of the test's own on a free loopback port and waits until its smtpd greets. */
export async function startPrivatePostfix(options: PrivatePostfixOptions): Promise<PrivatePostfix> {
  if (!isRoot) throw new Error('a private Postfix must be started as root (its master runs as root and its daemons as the postfix user)');
  const postfix = await ensurePostfix();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'notify-postfix-'));
  // The daemons run as the postfix user and must reach the queue below this directory.
  chmodSync(dir, 0o755);
  const configDir = join(dir, 'config');
  const dataDir = join(dir, 'data');
  mkdirSync(configDir);
  mkdirSync(join(dir, 'queue'));
  mkdirSync(dataDir);
  const owner = Number(execFileSync('id', ['-u', 'postfix'], { encoding: 'utf8' }).trim());
  chownSync(dataDir, owner, -1);
  writeFileSync(join(configDir, 'main.cf'), mainCf(dir, port, await compatibilityLevel(postfix), options));
  writeFileSync(join(configDir, 'master.cf'), masterCf(port));
  const maillog = join(dir, 'maillog');
  const log = (): string => (existsSync(maillog) ? readFileSync(maillog, 'utf8') : '');
  // Postfix reads MAIL_CONFIG from the environment; only -c may choose the instance.
  const { MAIL_CONFIG: _, ...env } = process.env;
  const control = (command: 'start' | 'stop' | 'abort') => run(postfix, ['-c', configDir, command], { env, timeoutMs: 60_000 });
  const masterPid = (): number | undefined => {
    const pidFile = join(dir, 'queue', 'pid', 'master.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  };
  // A test process that dies without stop() must not leave a Postfix behind.
  const abortNow = (): void => {
    try {
      execFileSync(postfix, ['-c', configDir, 'abort'], { env, stdio: 'ignore', timeout: 10_000 });
    } catch {
      const pid = masterPid();
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', abortNow);

  const started = await control('start');
  if (started.code !== 0) {
    process.off('exit', abortNow);
    const details = `${started.output}${log()}`;
    abortNow();
    throw new Error(`postfix -c ${configDir} start exited with code ${started.code}:\n${details}`);
  }
  const deadline = Date.now() + 15_000;
  while (!(await greets(port))) {
    if (Date.now() > deadline) {
      process.off('exit', abortNow);
      const details = log();
      abortNow();
      throw new Error(`the private Postfix did not greet on 127.0.0.1:${port} within 15 s:\n${details}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  let stopped: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    directory: dir,
    log,
    stop() {
      stopped ??= (async () => {
        process.off('exit', abortNow);
        const pid = masterPid();
        // `postfix stop` signals the master and returns; the master then ends its children and exits.
        if ((await control('stop')).code !== 0) await control('abort');
        const until = Date.now() + 10_000;
        while (pid && alive(pid) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

/** The installed release as a compatibility level ("3.7" for 3.7.11): every current default applies. */
async function compatibilityLevel(postfix: string): Promise<string> {
  const postconf = join(dirname(postfix), 'postconf');
  const result = await run(existsSync(postconf) ? postconf : 'postconf', ['-d', '-h', 'mail_version']);
  const version = /^(\d+\.\d+)\.\d+\s*$/m.exec(result.output)?.[1];
  if (result.code !== 0 || !version) throw new Error(`postconf -d mail_version failed:\n${result.output}`);
  return version;
}
