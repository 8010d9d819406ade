// Entry for `node --import`: installs the ESM loader hook the instrumentations need, then starts tracing.
//
// The hook wraps only the modules an enabled instrumentation patches (node:http, node:https and @grpc/grpc-js; with a
// collector also koa, pg, pg-pool and ioredis): the SDK tells it each as it enables the instrumentation, and the
// service's own modules load only once the hook has taken them all. Left to wrap every module, its default, the hook
// cost each service a tenth of the CPU it spends loading its modules (the gateway 863 ms against 782 ms, the mailer
// 768 ms against 660 ms), about half a second of CPU at every start of the six.
import { register } from 'node:module';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { startTelemetry } from './telemetry.ts';

const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, registerOptions);
await startTelemetry(process.env, process.argv[1], process.pid);
await waitForAllMessagesAcknowledged();
