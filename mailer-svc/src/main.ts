// mailer-svc: delivers queued messages. Pulls jobs from NOTIFY_JOBS, renders and sends them over SMTP, remembers each
// finished delivery in its outcome ledger, and records every transition on NOTIFY_EVENTS for dispatch-svc. Mail is
// signed with the DKIM key dispatch-svc holds for MAIL_FROM's domain, when there is one, and leaves through SMTP_URL's
// relays (in order, failing over) or the relays dispatch-svc holds for the message's project.
import { runService, ShutdownPriority } from '@notify/platform';
import { connectNats } from '@notify/platform/nats';
import { buildMailer } from './build.ts';
import { mailerConfig } from './config.ts';
import { Mailer } from './delivery/mailer.ts';
import { assertTestFaultAllowed } from './test-fault.ts';

runService('mailer-svc', mailerConfig, async ({ config, logger, registry, lifecycle, addReadinessCheck, crash }) => {
  assertTestFaultAllowed(config.testFault, config.nodeEnv);
  const nats = await connectNats(config.natsUrl, 'mailer-svc', logger, config);
  const parts = await buildMailer(config, { nats, logger, registry, addReadinessCheck, crash });
  const mailer = await Mailer.start(parts.deps, parts.settings);

  // Leave time, within the step's own limit, to return unfinished jobs to the queue before the step is abandoned.
  const drainDeadlineMs = config.shutdownTimeoutMs - Math.min(1_000, Math.floor(config.shutdownTimeoutMs / 5));
  lifecycle.onShutdown('stop pulling jobs', ShutdownPriority.stopIntake, async () => mailer.stopIntake());
  lifecycle.onShutdown('finish held jobs', ShutdownPriority.drain, () => mailer.drain(drainDeadlineMs));
  // Before NATS closes: the replica's presence is withdrawn, so the others take its share of each domain at once.
  lifecycle.onShutdown('destination throttle', ShutdownPriority.drain, () => parts.throttle.close());
  lifecycle.onShutdown('SMTP transport', ShutdownPriority.closeClients, async () => parts.sender.close());
  lifecycle.onShutdown('render workers', ShutdownPriority.closeClients, () => parts.renderer.close());
  lifecycle.onShutdown('DKIM key refresh', ShutdownPriority.closeClients, () => parts.stopDkimRefresh());
  lifecycle.onShutdown('project relays refresh', ShutdownPriority.closeClients, () => parts.stopRelayRefresh());
  lifecycle.onShutdown('NATS', ShutdownPriority.closeClients, () => nats.drain());
});
