// mailer-svc assembled from its settings and its NATS connection: the streams, the jobs consumer and the outcome ledger,
// the DKIM keys of the domains mail is From and the projects' own relays (both fetched from dispatch-svc, and again
// periodically), the render workers, the destination throttle, the relays and the mail sender. main.ts starts the
// mailer on them.
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConfigOf, channelCredentials, GrpcClient, type Logger, type ReadinessCheck, type Registry, runPeriodically } from '@notify/platform';
import {
  declareJetStream,
  ensureConsumer,
  ensureStream,
  jetstream,
  jetstreamManager,
  type KV,
  type NatsConnection,
  natsReachable,
  openBucket,
} from '@notify/platform/nats';
import { dispatchProto, streamDeclarations, topology } from '@notify/proto';
import { type RenderPool, startRenderPool } from '@notify/templating';
import type { mailerConfig } from './config.ts';
import { mailerConsumerConfig } from './delivery/consumer-config.ts';
import { createThrottleMetrics, DestinationThrottle, paceTtlMs } from './delivery/destination-throttle.ts';
import { createMailSender, type MailSender } from './delivery/mail-sender.ts';
import type { MailerDependencies, MailerSettings } from './delivery/mailer.ts';
import { createMailerMetrics, type MailerMetrics } from './delivery/metrics.ts';
import { openOutcomeLedger } from './delivery/outcome-ledger.ts';
import { PoolRefusals } from './delivery/pool-refusals.ts';
import { ProjectRelays } from './delivery/project-relays.ts';
import { createRelayMetrics, registerCircuitGauge } from './delivery/relay-metrics.ts';
import { Relays } from './delivery/relays.ts';
import { DkimKeys } from './signing/dkim-keys.ts';

export type MailerConfig = ConfigOf<typeof mailerConfig>;

export interface MailerClients {
  readonly nats: NatsConnection;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Adds a check to /readyz (the service's own). */
  readonly addReadinessCheck: (name: string, check: ReadinessCheck) => void;
  /** What NOTIFY_TEST_FAULT=exit-after-send calls to die like a crash (the service's `crash`). */
  readonly crash: () => void;
}

export interface MailerParts {
  /** What Mailer.start takes. */
  readonly deps: MailerDependencies;
  readonly settings: MailerSettings;
  readonly throttle: DestinationThrottle;
  readonly sender: MailSender;
  readonly renderer: RenderPool;
  /** Stops fetching the DKIM keys and closes the client they are fetched with. */
  stopDkimRefresh(): Promise<void>;
  /** Stops fetching the projects' relays and closes the client they are fetched with. */
  stopRelayRefresh(): Promise<void>;
}

/** Pause between two tries of the first fetch of the projects' relays. */
const routesRetryMs = 1_000;
/** Request timeout of the outcome ledger's reads and writes (milliseconds on a healthy cluster). */
const ledgerTimeoutMs = 2_000;

/**
 * Everything the mailer runs on, ready before it takes a job: MAIL_FROM's DKIM key fetched once (when dispatch-svc
 * answers), and the projects' relays known (it waits for dispatch-svc's first answer, not ready until then).
 */
export async function buildMailer(config: MailerConfig, clients: MailerClients): Promise<MailerParts> {
  const { nats, crash } = clients;
  const { names, js, ledger, throttleBucket } = await openJetStream(config, clients);
  const dkim = await followDkimKeys(config, clients);
  const routes = await followProjectRelays(config, clients);
  const metrics = createMailerMetrics(clients.registry);
  const { renderer, throttle, sender, relayRefresh } = await openDelivery(config, clients, {
    throttleBucket,
    metrics,
    dkimKeys: dkim.keys,
    projectRelays: routes.relays,
  });
  return {
    deps: {
      js,
      publisher: js,
      flush: () => nats.flush(),
      names,
      ledger,
      renderer,
      sender,
      throttle,
      metrics,
      logger: clients.logger,
      ...(config.testFault === 'exit-after-send' ? { afterSend: crash } : {}),
    },
    settings: {
      concurrency: config.concurrency,
      ackWaitMs: config.ackWaitMs,
      maxAttempts: config.maxAttempts,
      maxAgeMs: config.maxAgeMs,
      baseMs: config.retryBaseMs,
      maxMs: config.retryMaxMs,
    },
    throttle,
    sender,
    renderer,
    stopDkimRefresh: dkim.stop,
    async stopRelayRefresh() {
      await relayRefresh.stop();
      routes.client.close();
    },
  };
}

/** The streams, the jobs consumer, the outcome ledger and the throttle's bucket, declared (again after each reconnect). */
async function openJetStream(config: MailerConfig, { nats, logger, addReadinessCheck }: MailerClients) {
  const names = topology(config.natsPrefix);
  const js = jetstream(nats);
  const { ledger, throttleBucket } = await declareJetStream(
    'streams, jobs consumer, outcome ledger and throttle bucket',
    async () => {
      const jsm = await jetstreamManager(nats);
      const streams = streamDeclarations(names);
      for (const stream of [streams.jobs, streams.events, streams.deadLetters]) await ensureStream(jsm, stream, config.natsStreamReplicas);
      await ensureConsumer(jsm, names.jobsStream, mailerConsumerConfig(names, config));
      // Its reads and writes through a client of its own with a short request timeout: a write lost while NATS restarts
      // is tried again as soon as the connection is back, not after the default 5 s, which may exceed what is left of
      // the job's ack wait. Its bucket is created with the default timeout (a replicated stream elects a leader first).
      const ledger = await openOutcomeLedger(js, jsm, { names, replicas: config.natsStreamReplicas, requests: jetstream(nats, { timeout: ledgerTimeoutMs }) });
      const throttleBucket = await openBucket(js, jsm, names.throttleBucket, { ttlMs: paceTtlMs, replicas: config.natsStreamReplicas });
      return { ledger, throttleBucket };
    },
    { logger, redeclareOn: nats },
  );
  addReadinessCheck('nats', () => natsReachable(nats));
  return { names, js, ledger, throttleBucket };
}

function dispatchClient<S extends typeof dispatchProto.SigningKeyService.service | typeof dispatchProto.RelayRouteService.service>(
  service: S,
  config: MailerConfig,
  registry: Registry,
): GrpcClient<S> {
  return new GrpcClient(service, config.dispatchSvcAddr, {
    token: config.mailerToken,
    deadlineMs: config.grpcDeadlineMs,
    registry,
    credentials: channelCredentials(config),
  });
}

/**
 * The DKIM keys: MAIL_FROM's fetched before any job is taken, so a domain with a key is signed from the first mail (when
 * dispatch-svc is up; otherwise the periodic refresh keeps trying while mail goes out unsigned), the domains jobs name
 * From as they come; every held key again each DKIM_KEY_REFRESH.
 */
async function followDkimKeys(config: MailerConfig, { registry, logger }: MailerClients): Promise<{ keys: DkimKeys; stop(): Promise<void> }> {
  const client = dispatchClient(dispatchProto.SigningKeyService.service, config, registry);
  const keys = new DkimKeys({ domain: config.mailFrom.domain, dataKey: config.dataKey, fetch: (request) => client.call('GetSigningKey', request), logger });
  await keys.refresh();
  const refresh = runPeriodically('DKIM key refresh', config.dkimRefreshMs, () => keys.refresh(), logger);
  return {
    keys,
    async stop() {
      await refresh.stop();
      client.close();
    },
  };
}

/**
 * Projects' own relays, fetched like the DKIM key (never carried in jobs, which are not encrypted). Before
 * dispatch-svc's first answer a project's own relays are unknown, and its mail would leave through SMTP_URL: the mailer
 * takes no job (and is not ready) until it has answered. Jobs wait in JetStream for the other replicas.
 */
async function followProjectRelays(config: MailerConfig, { registry, logger, addReadinessCheck }: MailerClients) {
  const client = dispatchClient(dispatchProto.RelayRouteService.service, config, registry);
  const relays = new ProjectRelays({ dataKey: config.dataKey, fetch: () => client.call('ListProjectRelays', {}), logger });
  addReadinessCheck('project relays', async () => relays.loaded());
  while (!relays.loaded()) {
    await relays.refresh();
    if (!relays.loaded()) await sleep(routesRetryMs);
  }
  return { client, relays };
}

/** What the delivery is built on: the throttle's bucket, the DKIM keys and the projects' relays. */
interface DeliveryParts {
  readonly throttleBucket: KV;
  readonly metrics: MailerMetrics;
  readonly dkimKeys: DkimKeys;
  readonly projectRelays: ProjectRelays;
}

/** The render workers, the destination throttle, the relays (their routes refreshed) and the sender over them. */
async function openDelivery(config: MailerConfig, { registry, logger }: MailerClients, parts: DeliveryParts) {
  const { metrics, dkimKeys, projectRelays } = parts;
  // Templates render in worker threads: a hostile one holds a worker until its deadline, never this event loop.
  const renderer = await startRenderPool({
    workers: config.renderWorkers,
    onWorkerReplaced: (event) => logger.warn({ reason: event.reason, template: event.template, detail: event.detail }, 'render worker replaced'),
  });
  const throttle = await DestinationThrottle.open(
    { kv: parts.throttleBucket, metrics: createThrottleMetrics(registry), logger },
    // A replica keeps up to four times its concurrency waiting for their destinations outside its delivery slots.
    {
      defaults: { concurrency: config.destinationConcurrency, perSecond: config.destinationRate },
      domains: config.destinationLimits,
      parkLimit: 4 * config.concurrency,
    },
  );
  // Refusals every relay's pool answers by sending again on a new connection: heard by the throttle too.
  const poolRefusals = new PoolRefusals((to, refusal) => throttle.observe(to, refusal));
  const { relayFailureThreshold: failureThreshold, relayCoolDownMs: coolDownMs } = config;
  const relays = new Relays({
    defaultUrls: config.smtpUrls,
    projects: projectRelays,
    transportLogger: poolRefusals.logger,
    poolSize: config.smtpPoolSize,
    failureThreshold,
    coolDownMs,
    metrics: createRelayMetrics(registry),
    logger,
  });
  registerCircuitGauge(registry, () => relays.states());
  const relayRefresh = runPeriodically(
    'project relays refresh',
    config.relayRoutesRefreshMs,
    async () => {
      if (await projectRelays.refresh()) relays.prune();
    },
    logger,
  );
  const sender = createMailSender({
    relays,
    sender: config.mailFrom,
    dataKey: config.dataKey,
    bounceDomain: config.bounceDomain,
    publicUrl: config.publicUrl,
    dkimKey: (domain) => dkimKeys.keyFor(domain),
    onSigned: (signed) => metrics.dkimMails.inc({ dkim: signed ? 'signed' : 'unsigned' }),
    poolRefusals,
  });
  return { renderer, throttle, sender, relayRefresh };
}
