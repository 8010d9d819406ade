// DispatchService.SendMany, the gateway's single sends that arrived together in one call: each item goes through Send's
// own handler (its group commit puts the items in the same transaction batches), served as a Send call of its own
// (itemServer: its server span in the trace its item carries, its series, its refusal, an unexpected failure included:
// UNAVAILABLE when PostgreSQL is down, INTERNAL for a bug, logged as the server logs a failed handler). One item never
// fails the others.
import { checkItemCount, itemServer, type Logger, type RecordItem } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import type { SendHandler } from './send.ts';
import { maxBatchItems } from './send-batch.ts';

export type SendManyHandler = (request: dispatch.SendManyRequest__Output) => Promise<dispatch.SendManyResponse__Output>;

export function createSendManyHandler(send: SendHandler, logger: Logger, recordItem: RecordItem): SendManyHandler {
  const serveItem = itemServer({ path: dispatchProto.DispatchService.service.Send.path, field: 'send', handle: send, logger, recordItem });
  return async (request) => {
    checkItemCount(request.items.length, maxBatchItems, 'send many');
    // All submitted in this tick: Send's batcher takes them into one transaction (up to its batch size).
    const outcomes = await Promise.all(request.items.map((item) => serveItem(item.send, item)));
    return {
      results: outcomes.map((outcome) =>
        outcome.answer ? { accepted: outcome.answer, outcome: 'accepted' } : { refused: outcome.refused ?? null, outcome: 'refused' },
      ),
    };
  };
}
