// Test support: handlers for a stand-in of auth-svc or dispatch-svc. Only the methods the gateway calls are written;
// every other method of the service answers UNIMPLEMENTED, so the stand-ins need no change when the services grow.
import type { ServiceDefinition } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { UserError, type AsyncHandlers } from '@notify/platform';

export function standIn<D extends ServiceDefinition>(definition: D, handlers: Partial<AsyncHandlers<D>>): AsyncHandlers<D> {
  const complete: Record<string, unknown> = { ...handlers };
  for (const method of Object.keys(definition)) {
    complete[method] ??= async () => {
      throw new UserError(status.UNIMPLEMENTED, 'not_used', `${method} is not used by the gateway`);
    };
  }
  return complete as AsyncHandlers<D>;
}
