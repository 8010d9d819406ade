// The frame every service's main.ts runs in: config, logger, metrics and the ops listener, signals, ordered shutdown.
// This is the only place that touches `process` on a service's behalf.
import { ConfigError, type ConfigOf, type Field, integer, loadConfig, oneOf } from './config.ts';
import { Lifecycle, ShutdownPriority } from './lifecycle.ts';
import { createLogger, type Logger } from './logger.ts';
import { createRegistry, type ReadinessCheck, type Registry, startOpsServer } from './metrics.ts';
import { stopTelemetry } from './telemetry.ts';

/** Variables every service reads, besides its own. */
export const commonConfig = {
  logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { description: 'pino log level', default: 'info' }),
  metricsPort: integer('METRICS_PORT', {
    description: 'port of the operations listener (/metrics, /healthz, /readyz); 0 picks a free one',
    default: 9464,
    min: 0,
    max: 65535,
  }),
  shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', { description: 'time each shutdown step may take before it is abandoned', default: 10_000, min: 100 }),
};

export interface ServiceContext<C> {
  readonly config: C & ConfigOf<typeof commonConfig>;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly lifecycle: Lifecycle;
  /** Adds a named dependency check to /readyz. */
  addReadinessCheck(name: string, check: ReadinessCheck): void;
  /** For test faults (NOTIFY_TEST_FAULT) only: kills the process at once, as SIGKILL from outside would, no shutdown step run. */
  crash(): void;
}

/**
 * Runs a service: loads and validates config (every fault printed, exit 1), starts the ops listener,
 * calls `start`, and on SIGTERM/SIGINT runs the shutdown handlers it registered, then exits. /readyz answers 503 with
 * `started: failing` until `start` has resolved, then the checks it added decide.
 */
export function runService<S extends Record<string, Field<unknown>>>(
  name: string,
  spec: S,
  start: (context: ServiceContext<ConfigOf<S>>) => Promise<void>,
): void {
  let config: ConfigOf<S> & ConfigOf<typeof commonConfig>;
  try {
    config = loadConfig({ ...commonConfig, ...spec }, process.env) as ConfigOf<S> & ConfigOf<typeof commonConfig>;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${name}: ${error.message}\n`);
    process.exit(1);
  }
  const logger = createLogger(name, config.logLevel);
  const registry = createRegistry(name);
  const lifecycle = new Lifecycle(logger, config.shutdownTimeoutMs);
  let started = false;
  // Not ready before `start` has finished, whatever the dependencies say: until then a gateway may not listen yet and a
  // mailer may not consume yet, and a rollout that counted such a replica ready would stop the old one too early.
  const checks: Record<string, ReadinessCheck> = { started: async () => started };
  lifecycle.onShutdown('telemetry', ShutdownPriority.final, stopTelemetry);

  const exit = (reason: string, code: number): void => {
    void lifecycle.shutdown(reason).then((clean) => process.exit(clean ? code : code || 1));
  };
  process.once('SIGTERM', () => exit('SIGTERM', 0));
  process.once('SIGINT', () => exit('SIGINT', 0));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    exit('uncaught exception', 1);
  });
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled rejection');
    exit('unhandled rejection', 1);
  });

  void (async () => {
    const ops = await startOpsServer({ port: config.metricsPort, registry, checks, logger });
    lifecycle.onShutdown('operations listener', ShutdownPriority.final, () => ops.close());
    await start({
      config,
      logger,
      registry,
      lifecycle,
      addReadinessCheck: (check, fn) => {
        checks[check] = fn;
      },
      crash: () => process.kill(process.pid, 'SIGKILL'),
    });
    started = true;
    logger.info('started');
  })().catch((error: unknown) => {
    logger.fatal({ err: error }, 'start failed');
    exit('start failed', 1);
  });
}
