// bounce-svc: the SMTP listener behind the bounce domain's MX. Reads DSNs (RFC 3464), feedback-loop complaints
// (ARF, RFC 5965) and mailto unsubscribes, and has dispatch-svc apply them (ReportService) before it answers 250.
import { readFile } from 'node:fs/promises';
import { channelCredentials, degradable, GrpcClient, runService, ShutdownPriority } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { bounceConfig } from './config.ts';
import { createBounceMetrics } from './reports/metrics.ts';
import { Receiver } from './reports/receiver.ts';

runService('bounce-svc', bounceConfig, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  if ((config.tlsKeyFile === '') !== (config.tlsCertFile === '')) throw new Error('BOUNCE_TLS_KEY_FILE and BOUNCE_TLS_CERT_FILE go together');
  if (config.maxHeldBytes < config.maxBytes)
    throw new Error('BOUNCE_MAX_HELD_BYTES must be at least BOUNCE_MAX_BYTES, or no report of the largest size could be held');
  const tls = config.tlsKeyFile === '' ? undefined : { key: await readFile(config.tlsKeyFile), cert: await readFile(config.tlsCertFile) };
  const reports = new GrpcClient(dispatchProto.ReportService.service, config.dispatchSvcAddr, {
    token: config.bounceToken,
    deadlineMs: config.grpcDeadlineMs,
    registry,
    credentials: channelCredentials(config),
  });
  const receiver = await Receiver.start({
    host: config.smtpHost,
    port: config.smtpPort,
    dataKey: config.dataKey,
    bounceDomain: config.bounceDomain,
    maxBytes: config.maxBytes,
    limits: {
      maxClients: config.maxClients,
      maxClientsPerAddress: config.maxClientsPerAddress,
      sessionTimeoutMs: config.sessionTimeoutMs,
      commandTimeoutMs: config.commandTimeoutMs,
      maxCommands: config.maxCommands,
      maxRecipients: config.maxRecipients,
      maxHeldBytes: config.maxHeldBytes,
    },
    reports,
    metrics: createBounceMetrics(registry),
    logger,
    ...(tls ? { tls } : {}),
    closeTimeoutMs: Math.max(1_000, config.shutdownTimeoutMs - 1_000),
  });
  addReadinessCheck('smtp', async () => receiver.listening());
  // Without dispatch-svc every report is answered 451 and retried by its sender: degraded, not a reason to refuse connections.
  addReadinessCheck(
    'dispatch',
    degradable(() => reports.serving()),
  );

  lifecycle.onShutdown('SMTP listener: finish open sessions', ShutdownPriority.drain, () => receiver.close());
  lifecycle.onShutdown('dispatch-svc client', ShutdownPriority.closeClients, async () => reports.close());
});
