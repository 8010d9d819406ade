// mailer-svc: delivers queued messages. Pulls jobs from NOTIFY_JOBS, renders and sends them over SMTP, and records
// every transition on NOTIFY_EVENTS for dispatch-svc.
import { runService, ShutdownPriority } from '@notify/platform';
import { connectNats, ensureConsumer, ensureStreams, jetstream, jetstreamManager, topology } from '@notify/platform/nats';
import { mailerConfig } from './config.ts';
import { mailerConsumerConfig } from './delivery/consumer-config.ts';
import { createMailSender } from './delivery/mail-sender.ts';
import { startMailer } from './delivery/mailer.ts';
import { createMailerMetrics } from './delivery/metrics.ts';
import { natsReachable } from './nats-readiness.ts';
import { createRenderer } from './rendering/renderer.ts';

/** Dispatch publishes with the same window; a job or event re-published within it is dropped as a duplicate. */
const duplicateWindowMs = 2 * 60_000;

runService('mailer-svc', mailerConfig, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  const names = topology(config.natsPrefix);
  const nc = await connectNats(config.natsUrl, 'mailer-svc', logger);
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, names, { replicas: config.natsStreamReplicas, duplicateWindowMs });
  await ensureConsumer(jsm, names.jobsStream, mailerConsumerConfig(names, config));
  addReadinessCheck('nats', () => natsReachable(nc));

  const sender = createMailSender({ smtpUrl: config.smtpUrl, sender: config.mailFrom, poolSize: config.smtpPoolSize, logger });
  const mailer = await startMailer(
    { js: jetstream(nc), names, renderer: createRenderer(), sender, metrics: createMailerMetrics(registry), logger },
    { concurrency: config.concurrency, ackWaitMs: config.ackWaitMs, maxAttempts: config.maxAttempts, baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
  );

  // Leave time, within the step's own limit, to return unfinished jobs to the queue before the step is abandoned.
  const drainDeadlineMs = config.shutdownTimeoutMs - Math.min(1_000, Math.floor(config.shutdownTimeoutMs / 5));
  lifecycle.onShutdown('stop pulling jobs', ShutdownPriority.stopIntake, async () => mailer.stopIntake());
  lifecycle.onShutdown('finish held jobs', ShutdownPriority.drain, () => mailer.drain(drainDeadlineMs));
  lifecycle.onShutdown('SMTP transport', ShutdownPriority.closeClients, async () => sender.close());
  lifecycle.onShutdown('NATS', ShutdownPriority.closeClients, () => nc.drain());
});
