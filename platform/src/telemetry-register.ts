// Entry for `node --import`: installs the ESM loader hook the instrumentations need, then starts tracing.
import { register } from 'node:module';
import { startTelemetry } from './telemetry.ts';

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
startTelemetry(process.env, process.argv[1], process.pid);
