// One service running as a real child process, started the way production starts it
// (`node --import @notify/platform/telemetry-register <svc>/src/main.ts`), ready when its /readyz answers 200.
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import type { PrefixedOutput } from './prefixed-output.ts';

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ServiceProcessOptions {
  /** Shown before each output line, e.g. `mailer-svc-1`. */
  readonly label: string;
  /** Folder of the service under the repository root, e.g. `mailer-svc`. */
  readonly dir: string;
  readonly rootDir: string;
  readonly metricsPort: number;
  env: Readonly<Record<string, string>>;
  readonly output: PrefixedOutput;
}

function describeExit(exit: ExitInfo): string {
  return exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

/** GET /readyz on the ops port: true on 200, false on anything else (including no answer). */
function probeReady(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/readyz', timeout: 1_000, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

export class ServiceProcess {
  readonly options: ServiceProcessOptions;
  #child: ChildProcess | undefined;
  #exit: Promise<ExitInfo> = Promise.resolve({ code: null, signal: null });
  #running = false;
  /** Set while the stack itself stops the process, so the exit is not reported as a crash. */
  #stopping = false;
  /** The stop under way, if one is. */
  #stop: Promise<ExitInfo> | undefined;

  constructor(options: ServiceProcessOptions) {
    this.options = options;
  }

  get label(): string {
    return this.options.label;
  }

  get running(): boolean {
    return this.#running;
  }

  get pid(): number | undefined {
    return this.#running ? this.#child?.pid : undefined;
  }

  /** Resolves when the current (or last) run of the process has exited. */
  exited(): Promise<ExitInfo> {
    return this.#exit;
  }

  start(): void {
    if (this.#running) throw new Error(`${this.label} is already running`);
    const { rootDir, dir, env, output, label } = this.options;
    // Its own process group: a Ctrl-C in the terminal reaches the launcher only, which then stops services in order.
    const child = spawn(process.execPath, ['--import', '@notify/platform/telemetry-register', `${dir}/src/main.ts`], {
      cwd: rootDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.#child = child;
    this.#running = true;
    this.#stopping = false;
    this.#stop = undefined;
    if (child.stdout) output.pipe(label, child.stdout);
    if (child.stderr) output.pipe(label, child.stderr);
    this.#exit = new Promise((resolve) => {
      child.once('error', (error) => {
        output.line(label, `[could not start: ${error.message}]`);
        this.#running = false;
        resolve({ code: null, signal: null });
      });
      child.once('exit', (code, signal) => {
        this.#running = false;
        const exit = { code, signal };
        if (!this.#stopping) output.line(label, `[${describeExit(exit)}]`);
        resolve(exit);
      });
    });
  }

  /** Polls /readyz until it answers 200; fails early, with the process's last lines, if it exits first. */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited: ExitInfo | undefined;
    void this.#exit.then((exit) => (exited = exit));
    for (;;) {
      if (exited || !this.#running) throw this.#failure(`${exited ? describeExit(exited) : 'stopped'} before it was ready`);
      if (await probeReady(this.options.metricsPort)) return;
      if (Date.now() > deadline) throw this.#failure(`was not ready within ${timeoutMs} ms (GET /readyz on port ${this.options.metricsPort})`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  #failure(what: string): Error {
    const recent = this.options.output
      .lines(this.label)
      .slice(-25)
      .map((line) => `  ${line.text}`)
      .join('\n');
    return new Error(`${this.label} ${what}${recent ? `; its last output:\n${recent}` : ''}`);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.#running) this.#child?.kill(signal);
  }

  /**
   * SIGTERM, then SIGKILL if it has not exited within `timeoutMs`; resolves once it has exited. Asked again while it
   * stops (a restart and the stack's stop at once), it waits for the same stop: a second SIGTERM would end the
   * service's graceful shutdown.
   */
  stop(timeoutMs: number): Promise<ExitInfo> {
    if (!this.#running) return this.#exit;
    this.#stop ??= this.#terminate(timeoutMs);
    return this.#stop;
  }

  async #terminate(timeoutMs: number): Promise<ExitInfo> {
    this.#stopping = true;
    this.signal('SIGTERM');
    // A process paused with SIGSTOP (chaos tests) only acts on SIGTERM once it runs again.
    this.signal('SIGCONT');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const first = await Promise.race([this.#exit, timedOut]);
    clearTimeout(timer);
    if (first !== 'timeout') return first;
    this.options.output.line(this.label, `[did not exit within ${timeoutMs} ms of SIGTERM: SIGKILL]`);
    this.signal('SIGKILL');
    return this.#exit;
  }

  /** Last resort when the launcher itself is exiting: synchronous, no waiting. */
  killNow(): void {
    this.signal('SIGKILL');
  }
}
