// DispatchService.SendMany, the gateway's single sends that arrived together in one call: each item goes through Send's
// own handler (its group commit puts the items in the same transaction batches), under a server span of its own named
// as Send's, in the trace its item carries. An item that fails answers the refusal its own Send call would have failed
// with, an unexpected failure included (UNAVAILABLE when PostgreSQL is down, INTERNAL for a bug, logged as the server
// logs a failed handler): it never fails the other items.
import { status } from '@grpc/grpc-js';
import { contextOfItem, endItemSpan, itemRefusal, SpanKind, startItemSpan, toGrpcFailure, UserError, withActiveSpan, type Logger } from '@notify/platform';
import { dispatchProto, type dispatch } from '@notify/proto';
import { maxBatchItems } from './send-batch.ts';
import type { SendHandler } from './send.ts';

export type SendManyHandler = (request: dispatch.SendManyRequest__Output) => Promise<dispatch.SendManyResponse__Output>;

const sendPath = dispatchProto.DispatchService.service.Send.path;

/** Counts an item as a call of `path` with its status and time (GrpcServer.recordItem). */
export type RecordItem = (path: string, code: status, seconds: number) => void;

export function createSendManyHandler(send: SendHandler, logger: Logger, recordItem: RecordItem): SendManyHandler {
  async function sendItem(item: dispatch.SendManyItem__Output): Promise<dispatch.SendBatchResult__Output> {
    const started = performance.now();
    const span = startItemSpan(sendPath, SpanKind.SERVER, contextOfItem(item));
    const ended = (code: status, details?: string): void => {
      endItemSpan(span, code, details);
      recordItem(sendPath, code, (performance.now() - started) / 1000);
    };
    try {
      if (!item.send) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', 'invalid send request: send: is required', { fields: ['send: is required'] });
      const accepted = await withActiveSpan(span, () => send(item.send as dispatch.SendRequest__Output));
      ended(status.OK);
      return { accepted, outcome: 'accepted' };
    } catch (error) {
      const failure = toGrpcFailure(error);
      if (failure.unexpected) logger.error({ err: error, method: sendPath }, 'gRPC handler failed (a send of a SendMany call)');
      ended(failure.code, failure.details);
      return { refused: itemRefusal(failure), outcome: 'refused' };
    }
  }

  return async (request) => {
    const count = request.items.length;
    if (count < 1 || count > maxBatchItems) {
      const fault = `items: must hold 1-${maxBatchItems} sends`;
      throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid send many request: ${fault}`, { fields: [fault] });
    }
    // All submitted in this tick: Send's batcher takes them into one transaction (up to its batch size).
    return { results: await Promise.all(request.items.map(sendItem)) };
  };
}
