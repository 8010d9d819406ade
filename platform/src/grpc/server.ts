// gRPC server with the cross-cutting concerns as interceptors: caller-token check, metrics, logging of unexpected errors,
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

/** One calling component (gateway, mailer, bounce, admin) and the bearer token it presents. */
export interface Caller {
  readonly name: string;
  readonly token: string;
}

/** Who may call a service: the same callers for every method, or a list per method (least privilege inside a service). */
export type Access<D> = readonly Caller[] | { readonly [M in keyof KnownMethods<D>]: readonly Caller[] };

const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

function serviceOf(path: string): string {
  return path.split('/')[1] ?? '';
}

/**
 * Largest gRPC message a Notify client or server sends or receives. gRPC's default (4 MiB) is below the gateway's batch
 * body limit (5 MiB), so it must be raised everywhere at once: a public body limit may be at most a quarter of this
 * (gateway/src/config.ts), which leaves room for what a request grows by on its way in (a number such as `1e20` comes
 * out of JSON.stringify five times longer). A message over it still fails with RESOURCE_EXHAUSTED, which the gateway
 * answers 413.
 */
export const grpcMessageLimitBytes = 64 * 1024 * 1024;

export class GrpcServer {
  readonly #server: grpc.Server;
  readonly #health = new HealthImplementation({ '': 'NOT_SERVING' });
  /** Method path → names of the callers it accepts. Paths not here (grpc.health.v1) are open. */
  readonly #allowed = new Map<string, ReadonlySet<string>>();
  /** Every caller any service accepts, so a known token on the wrong method is told apart from an unknown one. */
  readonly #callers = new Map<string, Buffer>();
  readonly #services = new Set<string>();
  readonly #logger: Logger;
  readonly #credentials: grpc.ServerCredentials;
  readonly #handled: Counter<'method' | 'code'>;
  readonly #duration: Histogram<'method'>;

  /** `credentials`: TLS from serverCredentials() (tls.ts); plaintext without. */
  constructor(options: { logger: Logger; registry: Registry; credentials?: grpc.ServerCredentials }) {
    this.#logger = options.logger;
    this.#credentials = options.credentials ?? grpc.ServerCredentials.createInsecure();
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
    this.#server = new grpc.Server({
      interceptors: [this.#intercept],
      'grpc.max_receive_message_length': grpcMessageLimitBytes,
      'grpc.max_send_message_length': grpcMessageLimitBytes,
    });
    this.#health.addToServer(this.#server);
  }

  /**
   * Serves `definition` to the callers `access` names, each presenting its token as `authorization: Bearer <token>`.
   * An unknown token is UNAUTHENTICATED; the token of a caller not allowed on the method is PERMISSION_DENIED.
   */
  add<D extends grpc.ServiceDefinition>(definition: D, handlers: AsyncHandlers<D>, access: Access<D>): void {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, spec] of Object.entries(definition)) {
      const callers: readonly Caller[] = Array.isArray(access) ? access : ((access as Record<string, readonly Caller[]>)[method] ?? []);
      for (const caller of callers) this.#register(caller);
      this.#allowed.set(spec.path, new Set(callers.map((caller) => caller.name)));
      this.#services.add(serviceOf(spec.path));
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
      this.#server.bindAsync(`${host}:${port}`, this.#credentials, (error, actual) => (error ? reject(error) : resolve(actual)));
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
    for (const service of this.#services) this.#health.setStatus(service, status);
  }

  #register(caller: Caller): void {
    const known = this.#callers.get(caller.name);
    const token = digest(caller.token);
    // Two tokens under one name would make the name in the refusal log a lie.
    if (known && !timingSafeEqual(known, token)) throw new Error(`caller ${caller.name} is registered with two different tokens`);
    this.#callers.set(caller.name, token);
  }

  /** The caller whose token `metadata` carries, or undefined for a missing or unknown token. */
  #identify(metadata: grpc.Metadata): string | undefined {
    const header = metadata.get('authorization')[0];
    if (typeof header !== 'string' || !header.startsWith('Bearer ')) return undefined;
    const presented = digest(header.slice('Bearer '.length));
    for (const [name, token] of this.#callers) if (timingSafeEqual(token, presented)) return name;
    return undefined;
  }

  /** Undefined when the call may proceed, otherwise the status that refuses it. */
  #refusal(path: string, metadata: grpc.Metadata): Pick<grpc.StatusObject, 'code' | 'details'> | undefined {
    const allowed = this.#allowed.get(path);
    if (!allowed) return undefined; // grpc.health.v1 is open, as kubelet probes carry no token
    const caller = this.#identify(metadata);
    if (caller === undefined) {
      this.#logger.warn({ method: path }, 'gRPC call refused: missing or unknown caller token');
      return { code: grpc.status.UNAUTHENTICATED, details: 'missing or unknown caller token' };
    }
    if (allowed.has(caller)) return undefined;
    // A real caller out of its lane: a misconfiguration or a compromised component, worth a warning (never the token).
    this.#logger.warn({ method: path, caller }, 'gRPC call refused: the caller may not call this method');
    return { code: grpc.status.PERMISSION_DENIED, details: `the ${caller} token may not call ${path}` };
  }

  /**
   * Counts one item of a call that carries many (SendMany's sends) as the call of `path` it stands for: the handled
   * and handling-time series then count each send and its status whether it came alone or batched.
   */
  recordItem(path: string, code: grpc.status, seconds: number): void {
    this.#handled.inc({ method: path, code: grpc.status[code] });
    this.#duration.observe({ method: path }, seconds);
  }

  readonly #intercept: grpc.ServerInterceptor = (descriptor, call) => {
    const started = performance.now();
    const record = (code: grpc.status): void => {
      this.#handled.inc({ method: descriptor.path, code: grpc.status[code] });
      this.#duration.observe({ method: descriptor.path }, (performance.now() - started) / 1000);
    };
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const refusal = this.#refusal(descriptor.path, metadata);
        if (!refusal) return next(metadata);
        record(refusal.code);
        call.sendStatus(refusal);
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
