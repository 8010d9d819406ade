// gRPC server with the cross-cutting concerns as interceptors: internal-token check, metrics, logging of unexpected errors,
// grpc.health.v1, and graceful shutdown (NOT_SERVING first, then drain in-flight calls).
import { hash, timingSafeEqual } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { HealthImplementation } from 'grpc-health-check';
import type { Logger } from '../logger.ts';
import { Counter, Histogram, type Registry } from '../metrics.ts';
import { toGrpcFailure } from './errors.ts';

/**
 * Handlers as async functions returning the full (`__Output`) response type: a handler that forgets a method
 * or a response field does not compile.
 */
export type AsyncHandlers<D> = {
  [M in keyof KnownMethods<D>]: D[M] extends MethodDefinition<infer _In, infer _Out, infer Request, infer Response>
    ? (request: Request, metadata: grpc.Metadata) => Promise<Response>
    : never;
};

/** The named methods of a generated service definition, without its `[index: string]` signature. */
export type KnownMethods<D> = { [K in keyof D as string extends K ? never : K]: D[K] };

const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

function serviceOf(path: string): string {
  return path.split('/')[1] ?? '';
}

export class GrpcServer {
  readonly #server: grpc.Server;
  readonly #health = new HealthImplementation({ '': 'NOT_SERVING' });
  readonly #tokenDigests = new Map<string, Buffer[]>();
  readonly #logger: Logger;
  readonly #handled: Counter<'method' | 'code'>;
  readonly #duration: Histogram<'method'>;

  constructor(options: { logger: Logger; registry: Registry }) {
    this.#logger = options.logger;
    this.#handled = new Counter({
      name: 'notify_grpc_server_handled_total',
      help: 'gRPC calls completed by the server, by method and status code',
      labelNames: ['method', 'code'],
      registers: [options.registry],
    });
    this.#duration = new Histogram({
      name: 'notify_grpc_server_handling_seconds',
      help: 'Time the server took to handle a gRPC call',
      labelNames: ['method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [options.registry],
    });
    this.#server = new grpc.Server({ interceptors: [this.#intercept] });
    this.#health.addToServer(this.#server);
  }

  /** Serves `definition` to callers presenting one of `tokens` as `authorization: Bearer <token>`. */
  add<D extends grpc.ServiceDefinition>(definition: D, handlers: AsyncHandlers<D>, tokens: readonly string[]): void {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, spec] of Object.entries(definition)) {
      this.#tokenDigests.set(serviceOf(spec.path), tokens.map(digest));
      const handler = (handlers as Record<string, unknown>)[method] as (request: unknown, metadata: grpc.Metadata) => Promise<unknown>;
      implementation[method] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        handler(call.request, call.metadata).then(
          (response) => callback(null, response),
          (error: unknown) => {
            const failure = toGrpcFailure(error);
            if (failure.unexpected) this.#logger.error({ err: error, method: spec.path }, 'gRPC handler failed');
            else this.#logger.debug({ method: spec.path, code: grpc.status[failure.code], details: failure.details }, 'gRPC call refused');
            callback({ code: failure.code, details: failure.details, metadata: failure.metadata });
          },
        );
      };
    }
    this.#server.addService(definition, implementation);
  }

  /** Binds, marks every service SERVING, and returns the bound port (useful with port 0). */
  async listen(port: number, host = '0.0.0.0'): Promise<number> {
    const bound = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (error, actual) =>
        error ? reject(error) : resolve(actual),
      );
    });
    this.#setAll('SERVING');
    this.#logger.info({ port: bound }, 'gRPC server listening');
    return bound;
  }

  /** Probes see NOT_SERVING from here on, so load balancers stop sending new calls. */
  stopServing(): void {
    this.#setAll('NOT_SERVING');
  }

  /** Waits for in-flight calls, then closes; calls still running after `graceMs` are cancelled. */
  async close(graceMs: number): Promise<void> {
    const timer = setTimeout(() => this.#server.forceShutdown(), graceMs);
    await new Promise<void>((resolve) => this.#server.tryShutdown(() => resolve()));
    clearTimeout(timer);
  }

  #setAll(status: 'SERVING' | 'NOT_SERVING'): void {
    this.#health.setStatus('', status);
    for (const service of this.#tokenDigests.keys()) this.#health.setStatus(service, status);
  }

  #accepts(path: string, metadata: grpc.Metadata): boolean {
    const accepted = this.#tokenDigests.get(serviceOf(path));
    if (!accepted) return true; // grpc.health.v1 is open, as kubelet probes carry no token
    const header = metadata.get('authorization')[0];
    if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false;
    const presented = digest(header.slice('Bearer '.length));
    return accepted.some((token) => timingSafeEqual(token, presented));
  }

  readonly #intercept: grpc.ServerInterceptor = (descriptor, call) => {
    const started = performance.now();
    const record = (code: grpc.status): void => {
      this.#handled.inc({ method: descriptor.path, code: grpc.status[code] });
      this.#duration.observe({ method: descriptor.path }, (performance.now() - started) / 1000);
    };
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        if (this.#accepts(descriptor.path, metadata)) return next(metadata);
        record(grpc.status.UNAUTHENTICATED);
        call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid internal token' });
      })
      .build();
    const responder = new grpc.ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((status, next) => {
        record(status.code);
        next(status);
      })
      .build();
    return new grpc.ServerInterceptingCall(call, responder);
  };
}
