// The HTTP ceiling: a bare Koa application answering every request with the gateway's 202 body and doing nothing
// else (no body read, no middleware, no logging, no telemetry), in a process of its own. Under the same load generator
// and connection count as the gateway, it shows what Node and Koa alone allow on this machine.
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.status = 202;
  ctx.body = { message_id: 1, status: 'queued', celery_task_id: '7f1c8a52-33be-4f0e-9a8e-2b5c1f0d4e6a', idempotent_replay: false };
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ type: 'ready', port: address && typeof address === 'object' ? address.port : 0 });
});
const close = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('message', (message: { type: string }) => message.type === 'close' && close());
process.on('disconnect', close);
