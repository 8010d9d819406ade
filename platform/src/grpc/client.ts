// Typed promise client for one gRPC service: the caller's token on every call, a deadline on every call,
// client-side round-robin over every address the name resolves to (a headless Service in Kubernetes), and the
// caller's view of each call as metrics (its latency includes the network and the server's queue).
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { Counter, Histogram, type Registry } from '../metrics.ts';
import { RemoteError } from './errors.ts';
import { grpcMessageLimitBytes, type KnownMethods } from './server.ts';

type RequestOf<T> = T extends MethodDefinition<infer Request, infer _Out, infer _RequestOut, infer _ResponseOut> ? Request : never;
type ResponseOf<T> = T extends MethodDefinition<infer _In, infer _Out, infer _RequestOut, infer Response> ? Response : never;

export interface GrpcClientOptions {
  /** Presented as `authorization: Bearer <token>`. */
  token: string;
  /** Default deadline of each call. */
  deadlineMs: number;
  /**
   * Where `notify_grpc_client_handled_total` and `notify_grpc_client_handling_seconds` go; without one the client
   * records nothing (tools and tests). Clients sharing a registry share the two metrics, told apart by `method`.
   */
  registry?: Registry;
  /** TLS from channelCredentials() (tls.ts); plaintext without. */
  credentials?: grpc.ChannelCredentials;
}

interface ClientMetrics {
  readonly handled: Counter<string>;
  readonly duration: Histogram<string>;
}

/** The registry's client metrics, created by the first client that uses it (prom-client refuses a second registration). */
function clientMetrics(registry: Registry): ClientMetrics {
  const handled = registry.getSingleMetric('notify_grpc_client_handled_total');
  const duration = registry.getSingleMetric('notify_grpc_client_handling_seconds');
  return {
    handled:
      handled instanceof Counter
        ? handled
        : new Counter({
            name: 'notify_grpc_client_handled_total',
            help: 'gRPC calls this process made, by method and the status code it got (DEADLINE_EXCEEDED when its own deadline passed)',
            labelNames: ['method', 'code'],
            registers: [registry],
          }),
    duration:
      duration instanceof Histogram
        ? duration
        : new Histogram({
            name: 'notify_grpc_client_handling_seconds',
            help: 'Time from starting a gRPC call to its answer or failure, as the caller saw it',
            labelNames: ['method'],
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
            registers: [registry],
          }),
  };
}

export const channelOptions: grpc.ChannelOptions = {
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.max_receive_message_length': grpcMessageLimitBytes,
  'grpc.max_send_message_length': grpcMessageLimitBytes,
};

export class GrpcClient<D extends grpc.ServiceDefinition> {
  readonly #client: grpc.Client;
  readonly #definition: D;
  readonly #options: GrpcClientOptions;
  readonly #metrics: ClientMetrics | undefined;

  /** `address` is a gRPC target such as `dns:///auth-svc:50051` or `127.0.0.1:50051`. */
  constructor(definition: D, address: string, options: GrpcClientOptions) {
    this.#definition = definition;
    this.#options = options;
    this.#metrics = options.registry && clientMetrics(options.registry);
    this.#client = new grpc.Client(address, options.credentials ?? grpc.credentials.createInsecure(), channelOptions);
  }

  /** The deadline of a call made without one of its own. */
  get deadlineMs(): number {
    return this.#options.deadlineMs;
  }

  /** Rejects with RemoteError (status, stable reason, field messages) when the call fails or passes its deadline. */
  call<M extends keyof KnownMethods<D> & string>(method: M, request: RequestOf<D[M]>, options: { deadlineMs?: number } = {}): Promise<ResponseOf<D[M]>> {
    const spec = this.#definition[method] as D[M];
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${this.#options.token}`);
    const deadline = Date.now() + (options.deadlineMs ?? this.#options.deadlineMs);
    const started = performance.now();
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(spec.path, spec.requestSerialize, spec.responseDeserialize, request, metadata, { deadline }, (error, response) => {
        this.#record(spec.path, error ? error.code : grpc.status.OK, started);
        if (error) reject(new RemoteError(error));
        else resolve(response as ResponseOf<D[M]>);
      });
    });
  }

  #record(method: string, code: grpc.status, started: number): void {
    if (!this.#metrics) return;
    this.#metrics.handled.inc({ method, code: grpc.status[code] ?? String(code) });
    this.#metrics.duration.observe({ method }, (performance.now() - started) / 1000);
  }

  /** grpc.health.v1 Check of the whole server: true when it answers SERVING. Not in the metrics: readiness probes poll it. */
  async serving(deadlineMs = 1_000): Promise<boolean> {
    const check = healthService.Check;
    if (!check) return false;
    const response = await new Promise<{ status?: unknown }>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        check.path,
        check.requestSerialize,
        check.responseDeserialize,
        { service: '' },
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (error, value) => (error ? reject(error) : resolve(value as { status?: unknown })),
      );
    });
    return response.status === 'SERVING' || response.status === 1;
  }

  close(): void {
    this.#client.close();
  }
}
