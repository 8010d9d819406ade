// `npm test`: every suite in turn, stopping at the first that fails, then how long each took and the total (the
// durations README.md quotes come from this summary).
import { spawn } from 'node:child_process';
import { nodeCompileCache } from '@notify/cli/local';

interface Phase {
  readonly script: string;
  readonly env?: Record<string, string>;
}

/** The soaks in their 30-second form: the long ones are `npm run test:chaos` and `test:chaos:cluster` on their own. */
const soak = { CHAOS_DURATION: '30s' };

const phases: readonly Phase[] = [
  { script: 'lint' },
  { script: 'typecheck' },
  { script: 'test:unit' },
  { script: 'test:ops' },
  { script: 'test:e2e' },
  { script: 'test:chaos', env: soak },
  { script: 'test:chaos:cluster', env: soak },
];

function run(phase: Phase): Promise<number> {
  return new Promise((resolve) => {
    // Every test process and the services it starts reuse the code Node compiled in an earlier one.
    const env = { ...process.env, NODE_COMPILE_CACHE: nodeCompileCache, ...phase.env };
    const child = spawn('npm', ['run', '--silent', phase.script], { stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(0)} s`;
const started = performance.now();
const took: string[] = [];
let failed: string | undefined;
for (const phase of phases) {
  const start = performance.now();
  const code = await run(phase);
  took.push(`  ${phase.script.padEnd(20)} ${seconds(performance.now() - start).padStart(6)}${code === 0 ? '' : '  FAILED'}`);
  if (code !== 0) {
    failed = phase.script;
    break;
  }
}
console.log(`\nnpm test: ${failed ? `${failed} failed` : 'every suite passed'} in ${seconds(performance.now() - started)}\n${took.join('\n')}`);
process.exitCode = failed ? 1 : 0;
