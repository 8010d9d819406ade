// DispatchService.GetMessage and GetMessages (the gateway's status reads that arrived together, in one call): every
// read goes through one Batcher, so the reads of a GetMessages call, and unary reads that arrive together, are read in
// one statement (getMessages). Each item of a GetMessages call is served as a GetMessage call of its own (itemServer):
// its span, its series, its own NOT_FOUND; one item never fails the others.
import { Batcher, checkItemCount, itemServer, type Logger, type RecordItem } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type dispatch, dispatchProto } from '@notify/proto';
import { getMessages } from './queries.ts';
import { maxBatchItems } from './send-batch.ts';

/**
 * Reads per statement at most, and statements at once: a share of the pool. A read commits nothing, so fewer, fuller
 * statements saved no CPU here, unlike the sends' transactions (send.ts): one at a time measured the same per read.
 */
const maxReadsPerStatement = 64;
const concurrentStatements = 4;

export interface MessageReadHandlers {
  readonly GetMessage: (request: dispatch.GetMessageRequest__Output) => Promise<dispatch.Message__Output>;
  readonly GetMessages: (request: dispatch.GetMessagesRequest__Output) => Promise<dispatch.GetMessagesResponse__Output>;
}

export function messageReadHandlers(pool: Pool, logger: Logger, recordItem: RecordItem): MessageReadHandlers {
  const reads = new Batcher<dispatch.GetMessageRequest__Output, dispatch.Message__Output>({
    maxBatchSize: maxReadsPerStatement,
    concurrency: concurrentStatements,
    run: (requests) => getMessages(pool, requests),
  });
  const GetMessage = (request: dispatch.GetMessageRequest__Output): Promise<dispatch.Message__Output> => reads.submit(request);
  const serveItem = itemServer({ path: dispatchProto.DispatchService.service.GetMessage.path, field: 'get', handle: GetMessage, logger, recordItem });
  return {
    GetMessage,
    GetMessages: async (request) => {
      checkItemCount(request.items.length, maxBatchItems, 'get messages');
      const outcomes = await Promise.all(request.items.map((item) => serveItem(item.get, item)));
      return {
        results: outcomes.map((outcome) =>
          outcome.answer ? { found: outcome.answer, outcome: 'found' } : { refused: outcome.refused ?? null, outcome: 'refused' },
        ),
      };
    },
  };
}
