// Entry for `node --import`: installs the ESM loader hook the instrumentations need, then starts tracing.
//
// The hook runs on the service's own thread (module.registerHooks, Node >= 24.11.1), not on the loader thread of
// module.register, which cost every service 0.2-0.6 s of CPU at start in messages between the two threads. It wraps
// only the modules an enabled instrumentation patches (node:http, node:https and @grpc/grpc-js; with a collector also
// koa, pg, pg-pool and ioredis): the SDK names each as it enables the instrumentation, and the service's own modules
// load only once the hook has taken them all. Left to wrap every module, its default, the hook would cost each
// service about a tenth more CPU to load its modules.
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { register } from 'import-in-the-middle/register-hooks.mjs';
import { startTelemetry } from './telemetry.ts';

const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register(registerOptions.data);
await startTelemetry(process.env, process.argv[1], process.pid);
await waitForAllMessagesAcknowledged();
