// `npm test`: every suite, stopping after the first step in which one fails, then how long each took and the total (the
// durations README.md quotes come from this summary). The suites of one step run at the same time: the two soaks each
// leave a third of the CPU idle (both at once take 67 s, one after the other 105 s). The first one's output is shown
// as it comes, the others' when they end. A stream of its own is held in the shared NATS meanwhile (jetstream-anchor.ts).
import { spawn } from 'node:child_process';
import { nodeCompileCache } from '@notify/cli/local';
import { testEnvironment } from './harness/environment.ts';
import { holdJetStreamAccount } from './harness/jetstream-anchor.ts';

interface Phase {
  readonly script: string;
  readonly env?: Record<string, string>;
}

/** The soaks in their 30-second form: the long ones are `npm run test:chaos` and `test:chaos:cluster` on their own. */
const soak = { CHAOS_DURATION: '30s' };

const steps: readonly (readonly Phase[])[] = [
  [{ script: 'lint' }],
  [{ script: 'typecheck' }],
  [{ script: 'test:unit' }],
  [{ script: 'test:ops' }],
  [{ script: 'test:e2e' }],
  [
    { script: 'test:chaos', env: soak },
    { script: 'test:chaos:cluster', env: soak },
  ],
];

interface Outcome {
  readonly phase: Phase;
  readonly code: number;
  readonly ms: number;
  /** The output, when it was held back. */
  readonly output?: Buffer[];
}

function run(phase: Phase, live: boolean): Promise<Outcome> {
  const start = performance.now();
  return new Promise((resolve) => {
    // Every test process and the services it starts reuse the code Node compiled in an earlier one.
    const env = { ...process.env, NODE_COMPILE_CACHE: nodeCompileCache, ...phase.env };
    const child = spawn('npm', ['run', '--silent', phase.script], { stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'], env });
    const output: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('exit', (code, signal) => {
      resolve({ phase, code: code ?? (signal ? 1 : 0), ms: performance.now() - start, ...(live ? {} : { output }) });
    });
  });
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(0)} s`;
const started = performance.now();
const took: string[] = [];
const failed: string[] = [];
const releaseAccount = await holdJetStreamAccount(testEnvironment.natsUrl);
for (const step of steps) {
  const outcomes = await Promise.all(step.map((phase, index) => run(phase, index === 0)));
  for (const { phase, code, ms, output } of outcomes) {
    if (output) process.stdout.write(Buffer.concat([Buffer.from(`\n--- npm run ${phase.script} ---\n`), ...output]));
    const together = step.length > 1 ? '  (beside the other suites of its step)' : '';
    took.push(`  ${phase.script.padEnd(20)} ${seconds(ms).padStart(6)}${code === 0 ? '' : '  FAILED'}${together}`);
    if (code !== 0) failed.push(phase.script);
  }
  if (failed.length > 0) break;
}
await releaseAccount();
console.log(
  `\nnpm test: ${failed.length > 0 ? `${failed.join(', ')} failed` : 'every suite passed'} in ${seconds(performance.now() - started)}\n${took.join('\n')}`,
);
process.exitCode = failed.length > 0 ? 1 : 0;
