// Stand-ins of a gRPC service for tests: only the methods a test calls are written; every other method answers
// UNIMPLEMENTED, so the stand-ins need no change when the service grows.
import type { ServiceDefinition } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';

export function standIn<D extends ServiceDefinition>(definition: D, handlers: Partial<AsyncHandlers<D>>): AsyncHandlers<D> {
  const complete: Record<string, unknown> = { ...handlers };
  for (const method of Object.keys(definition)) {
    complete[method] ??= async () => {
      throw new UserError(status.UNIMPLEMENTED, 'not_used', `${method} is not used by this test`);
    };
  }
  return complete as AsyncHandlers<D>;
}
