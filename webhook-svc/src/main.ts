// webhook-svc: delivers webhook events. Consumes NOTIFY_WEBHOOKS (published by dispatch-svc's webhook relay), signs
// each request per Standard Webhooks, posts it safely, records every attempt and retries on the contract's schedule.
import { runService, ShutdownPriority } from '@notify/platform';
import { createPool, databaseReachable } from '@notify/platform/database';
import { connectNats, declareJetStream, jetstream, jetstreamManager, natsReachable, ReplicaPresence } from '@notify/platform/nats';
import { topology } from '@notify/proto';
import { webhookConfig } from './config.ts';
import { createWebhookMetrics } from './delivery/metrics.ts';
import { declareSenderJetStream, Sender } from './delivery/sender.ts';

/** The most of a response body kept in the attempts log. */
const maxBodyBytes = 1_024;

runService('webhook-svc', webhookConfig, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  if (config.ackWaitMs <= config.timeoutMs + 1_000) throw new Error('WEBHOOK_ACK_WAIT must exceed WEBHOOK_TIMEOUT by more than a second');
  if (config.projectConcurrency >= config.concurrency)
    throw new Error('WEBHOOK_PROJECT_CONCURRENCY must be below WEBHOOK_CONCURRENCY, so that one project never holds every request');
  const names = topology(config.natsPrefix);
  const pool = createPool(config.databaseUrl, { max: config.databasePoolSize, applicationName: 'webhook-svc', logger });
  const nc = await connectNats(config.natsUrl, 'webhook-svc', logger, config);
  const js = jetstream(nc);
  const replicasBucket = await declareJetStream(
    'webhooks stream, consumer and replicas bucket',
    async () => declareSenderJetStream(js, await jetstreamManager(nc), names, { ackWaitMs: config.ackWaitMs, replicas: config.natsStreamReplicas }),
    { logger, redeclareOn: nc },
  );
  // Each endpoint's requests are shared among the live replicas: this one's part is known before the first delivery.
  const presence = await ReplicaPresence.open(replicasBucket, { logger });
  addReadinessCheck('database', () => databaseReachable(pool));
  addReadinessCheck('nats', () => natsReachable(nc));

  const sender = Sender.start(
    { js, names, pool, metrics: createWebhookMetrics(registry), logger, dataKey: config.dataKey, replicas: () => presence.replicas },
    {
      concurrency: config.concurrency,
      endpointConcurrency: config.endpointConcurrency,
      projectConcurrency: config.projectConcurrency,
      outbound: { allowPrivate: config.allowPrivate, timeoutMs: config.timeoutMs, maxBodyBytes },
      schedule: config.schedule,
      disableAfterMs: config.disableAfterMs,
      leaseMs: config.ackWaitMs,
    },
  );
  if (config.allowPrivate) logger.warn('NOTIFY_WEBHOOK_ALLOW_PRIVATE=true: webhooks may reach plain http and private addresses');

  lifecycle.onShutdown('stop pulling and finish open requests, then leave the replicas', ShutdownPriority.drain, async () => {
    await sender.stop();
    await presence.close();
  });
  lifecycle.onShutdown('NATS', ShutdownPriority.closeClients, () => nc.drain());
  lifecycle.onShutdown('database pool', ShutdownPriority.closeClients, () => pool.end());
});
