// Test support: stand-ins of auth-svc or dispatch-svc and the quiet server they run on. Only the methods the gateway
// calls are written; every other method of the service answers UNIMPLEMENTED, so the stand-ins need no change when the
// services grow.
import { createRegistry, GrpcServer, itemRefusal, toGrpcFailure } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';

export { standIn } from '@notify/test/harness/grpc-stand-in.ts';

/** The platform's GrpcServer to serve stand-ins on, logging nothing: the tests look at the gateway, not at them. */
export function standInServer(): GrpcServer {
  return new GrpcServer({ logger: silentLogger('stand-ins'), registry: createRegistry('stand-ins') });
}

/** One item of a SendMany call answered as dispatch-svc answers it: `send`'s answer, or the refusal its own Send call would have failed with. */
export async function sendManyItem(
  item: dispatch.SendManyItem__Output,
  send: (request: dispatch.SendRequest__Output) => Promise<dispatch.SendResponse__Output>,
): Promise<dispatch.SendBatchResult__Output> {
  try {
    return { accepted: await send(item.send as dispatch.SendRequest__Output), outcome: 'accepted' };
  } catch (error) {
    return { refused: itemRefusal(toGrpcFailure(error)), outcome: 'refused' };
  }
}
