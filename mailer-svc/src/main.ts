// mailer-svc: delivers queued messages. Pulls jobs from NOTIFY_JOBS, renders and sends them over SMTP, remembers each
// finished delivery in its outcome ledger, and records every transition on NOTIFY_EVENTS for dispatch-svc. Mail is
// signed with the DKIM key dispatch-svc holds for MAIL_FROM's domain, when there is one, and leaves through SMTP_URL's
// relays (in order, failing over) or the relays dispatch-svc holds for the message's project.
import { setTimeout as sleep } from 'node:timers/promises';
import { channelCredentials, GrpcClient, runPeriodically, runService, ShutdownPriority } from '@notify/platform';
import { connectNats, createAckedPublisher, createInboxRequester, declareJetStream, ensureConsumer, ensureStream, jetstream, jetstreamManager, natsReachable } from '@notify/platform/nats';
import { dispatchProto, streamDeclarations, topology } from '@notify/proto';
import { mailerConfig } from './config.ts';
import { mailerConsumerConfig } from './delivery/consumer-config.ts';
import { createThrottleMetrics, openDestinationThrottle } from './delivery/destination-throttle.ts';
import { createMailSender } from './delivery/mail-sender.ts';
import { startMailer } from './delivery/mailer.ts';
import { createMailerMetrics } from './delivery/metrics.ts';
import { openOutcomeLedger } from './delivery/outcome-ledger.ts';
import { trackPoolRefusals } from './delivery/pool-refusals.ts';
import { createProjectRelays } from './delivery/project-relays.ts';
import { createRelayMetrics, registerCircuitGauge } from './delivery/relay-metrics.ts';
import { createRelays } from './delivery/relays.ts';
import { startRenderPool } from '@notify/templating';
import { createDkimKeys } from './signing/dkim-keys.ts';
import { assertTestFaultAllowed } from './test-fault.ts';

/** Pause between two tries of the first fetch of the projects' relays. */
const routesRetryMs = 1_000;
/** Request timeout of the outcome ledger's reads and writes (milliseconds on a healthy cluster). */
const ledgerTimeoutMs = 2_000;

runService('mailer-svc', mailerConfig, async ({ config, logger, registry, lifecycle, addReadinessCheck, crash }) => {
  assertTestFaultAllowed(config.testFault, config.nodeEnv);
  const names = topology(config.natsPrefix);
  const nc = await connectNats(config.natsUrl, 'mailer-svc', logger, config);
  const js = jetstream(nc);
  // One subscription for the replies of the events' publishes, the ledger's reads and writes and the double acks.
  const requester = createInboxRequester(nc);
  const publisher = createAckedPublisher(requester);
  const { jsm, ledger } = await declareJetStream(
    'streams, jobs consumer and outcome ledger',
    async () => {
      const jsm = await jetstreamManager(nc);
      const streams = streamDeclarations(names);
      for (const stream of [streams.jobs, streams.events, streams.deadLetters]) await ensureStream(jsm, stream, config.natsStreamReplicas);
      await ensureConsumer(jsm, names.jobsStream, mailerConsumerConfig(names, config));
      // Its reads and writes with a short timeout (outcome-ledger.ts); its bucket is created with the default one (a
      // replicated stream elects a leader first).
      const ledger = await openOutcomeLedger(js, jsm, { names, replicas: config.natsStreamReplicas, requests: { requester, publisher, timeoutMs: ledgerTimeoutMs } });
      return { jsm, ledger };
    },
    { logger },
  );
  addReadinessCheck('nats', () => natsReachable(nc));

  const signingKeys = new GrpcClient(dispatchProto.SigningKeyService.service, config.dispatchSvcAddr, {
    token: config.mailerToken,
    deadlineMs: config.grpcDeadlineMs,
    registry,
    credentials: channelCredentials(config),
  });
  const dkimKeys = createDkimKeys({ domain: config.mailFrom.domain, dataKey: config.dataKey, fetch: (request) => signingKeys.call('GetSigningKey', request), logger });
  // The first fetch before any job is taken, so a domain with a key is signed from the first mail (when dispatch-svc
  // is up; otherwise the periodic refresh keeps trying while mail goes out unsigned).
  await dkimKeys.refresh();
  const dkimRefresh = runPeriodically('DKIM key refresh', config.dkimRefreshMs, () => dkimKeys.refresh(), logger);
  // Projects' own relays, fetched like the DKIM key (never carried in jobs, which are not encrypted).
  const relayRoutes = new GrpcClient(dispatchProto.RelayRouteService.service, config.dispatchSvcAddr, {
    token: config.mailerToken,
    deadlineMs: config.grpcDeadlineMs,
    registry,
    credentials: channelCredentials(config),
  });
  const projectRelays = createProjectRelays({ dataKey: config.dataKey, fetch: () => relayRoutes.call('ListProjectRelays', {}), logger });
  // Before dispatch-svc's first answer a project's own relays are unknown, and its mail would leave through SMTP_URL:
  // the mailer takes no job (and is not ready) until it has answered. Jobs wait in JetStream for the other replicas.
  addReadinessCheck('project relays', async () => projectRelays.loaded());
  while (!projectRelays.loaded()) {
    await projectRelays.refresh();
    if (!projectRelays.loaded()) await sleep(routesRetryMs);
  }

  const metrics = createMailerMetrics(registry);
  // Templates render in worker threads: a hostile one holds a worker until its deadline, never this event loop.
  const renderer = await startRenderPool({
    workers: config.renderWorkers,
    onWorkerReplaced: (event) => logger.warn({ reason: event.reason, template: event.template, detail: event.detail }, 'render worker replaced'),
  });
  const throttle = await openDestinationThrottle(
    { js, jsm, bucket: names.throttleBucket, replicas: config.natsStreamReplicas, metrics: createThrottleMetrics(registry), logger },
    // A replica keeps up to four times its concurrency waiting for their destinations outside its delivery slots.
    { defaults: { concurrency: config.destinationConcurrency, perSecond: config.destinationRate }, domains: config.destinationLimits, parkLimit: 4 * config.concurrency },
  );
  // Refusals every relay's pool answers by sending again on a new connection: heard by the throttle too.
  const poolRefusals = trackPoolRefusals((to, refusal) => throttle.observe(to, refusal));
  const relays = createRelays({
    defaultUrls: config.smtpUrls,
    projects: projectRelays,
    transportLogger: poolRefusals.logger,
    poolSize: config.smtpPoolSize,
    failureThreshold: config.relayFailureThreshold,
    coolDownMs: config.relayCoolDownMs,
    metrics: createRelayMetrics(registry),
    logger,
  });
  registerCircuitGauge(registry, () => relays.states());
  const relayRefresh = runPeriodically('project relays refresh', config.relayRoutesRefreshMs, async () => {
    if (await projectRelays.refresh()) relays.prune();
  }, logger);
  const sender = createMailSender({
    relays,
    sender: config.mailFrom,
    dataKey: config.dataKey,
    bounceDomain: config.bounceDomain,
    publicUrl: config.publicUrl,
    dkimKey: dkimKeys.current,
    onSigned: (signed) => metrics.dkimMails.inc({ dkim: signed ? 'signed' : 'unsigned' }),
    poolRefusals,
  });
  const mailer = await startMailer(
    {
      js,
      requester,
      publisher,
      flush: () => nc.flush(),
      names,
      renderer,
      sender,
      ledger,
      throttle,
      metrics,
      logger,
      ...(config.testFault === 'exit-after-send' ? { afterSend: crash } : {}),
    },
    {
      concurrency: config.concurrency,
      ackWaitMs: config.ackWaitMs,
      maxAttempts: config.maxAttempts,
      maxAgeMs: config.maxAgeMs,
      baseMs: config.retryBaseMs,
      maxMs: config.retryMaxMs,
    },
  );

  // Leave time, within the step's own limit, to return unfinished jobs to the queue before the step is abandoned.
  const drainDeadlineMs = config.shutdownTimeoutMs - Math.min(1_000, Math.floor(config.shutdownTimeoutMs / 5));
  lifecycle.onShutdown('stop pulling jobs', ShutdownPriority.stopIntake, async () => mailer.stopIntake());
  lifecycle.onShutdown('finish held jobs', ShutdownPriority.drain, () => mailer.drain(drainDeadlineMs));
  // Before NATS closes: the replica's presence is withdrawn, so the others take its share of each domain at once.
  lifecycle.onShutdown('destination throttle', ShutdownPriority.drain, () => throttle.close());
  lifecycle.onShutdown('SMTP transport', ShutdownPriority.closeClients, async () => sender.close());
  lifecycle.onShutdown('render workers', ShutdownPriority.closeClients, () => renderer.close());
  lifecycle.onShutdown('DKIM key refresh', ShutdownPriority.closeClients, async () => {
    await dkimRefresh.stop();
    signingKeys.close();
  });
  lifecycle.onShutdown('project relays refresh', ShutdownPriority.closeClients, async () => {
    await relayRefresh.stop();
    relayRoutes.close();
  });
  lifecycle.onShutdown('NATS', ShutdownPriority.closeClients, () => nc.drain());
});
