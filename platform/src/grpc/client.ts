// Typed promise client for one gRPC service: internal token on every call, a deadline on every call,
// client-side round-robin over every address the name resolves to (a headless Service in Kubernetes).
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { RemoteError } from './errors.ts';
import type { KnownMethods } from './server.ts';

type RequestOf<T> = T extends MethodDefinition<infer Request, infer _Out, infer _RequestOut, infer _ResponseOut> ? Request : never;
type ResponseOf<T> = T extends MethodDefinition<infer _In, infer _Out, infer _RequestOut, infer Response> ? Response : never;

export interface GrpcClientOptions {
  /** Presented as `authorization: Bearer <token>`. */
  token: string;
  /** Default deadline of each call. */
  deadlineMs: number;
}

export const channelOptions: grpc.ChannelOptions = {
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

export class GrpcClient<D extends grpc.ServiceDefinition> {
  readonly #client: grpc.Client;
  readonly #definition: D;
  readonly #options: GrpcClientOptions;

  /** `address` is a gRPC target such as `dns:///auth-svc:50051` or `127.0.0.1:50051`. */
  constructor(definition: D, address: string, options: GrpcClientOptions) {
    this.#definition = definition;
    this.#options = options;
    this.#client = new grpc.Client(address, grpc.credentials.createInsecure(), channelOptions);
  }

  /** Rejects with RemoteError (status, stable reason, field messages) when the call fails or passes its deadline. */
  call<M extends keyof KnownMethods<D> & string>(method: M, request: RequestOf<D[M]>, options: { deadlineMs?: number } = {}): Promise<ResponseOf<D[M]>> {
    const spec = this.#definition[method] as D[M];
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${this.#options.token}`);
    const deadline = Date.now() + (options.deadlineMs ?? this.#options.deadlineMs);
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(spec.path, spec.requestSerialize, spec.responseDeserialize, request, metadata, { deadline }, (error, response) =>
        error ? reject(new RemoteError(error)) : resolve(response as ResponseOf<D[M]>),
      );
    });
  }

  /** grpc.health.v1 Check of the whole server: true when it answers SERVING. */
  async serving(deadlineMs = 1_000): Promise<boolean> {
    const check = healthService['Check'];
    if (!check) return false;
    const response = await new Promise<{ status?: unknown }>((resolve, reject) => {
      this.#client.makeUnaryRequest(check.path, check.requestSerialize, check.responseDeserialize, { service: '' }, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (error, value) =>
        error ? reject(error) : resolve(value as { status?: unknown }),
      );
    });
    return response.status === 'SERVING' || response.status === 1;
  }

  close(): void {
    this.#client.close();
  }
}
