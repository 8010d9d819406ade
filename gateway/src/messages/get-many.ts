// Status reads (GET /api/v1/messages/{id}/) reach dispatch-svc in GetMessages calls, as single sends travel in SendMany
// calls (../send/send-many.ts), with the same sizes: alone, a read is a call of one; what arrives while 16 calls are in
// flight goes in the next one, up to 64 reads a call. Each read keeps its own GetMessage call's deadline, answer or
// RemoteError, and client span; dispatch-svc reads the messages of the reads that arrive together in one statement.
import { BatchedCalls, type Registry } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import type { DispatchClient } from '../send/dispatch.ts';
import { sendManyDefaults } from '../send/send-many.ts';

export type MessageReader = BatchedCalls<dispatch.GetMessageRequest, dispatch.Message__Output>;

export function messageReader(client: DispatchClient, registry: Registry): MessageReader {
  return new BatchedCalls({
    path: dispatchProto.DispatchService.service.GetMessage.path,
    maxItems: sendManyDefaults.maxItems,
    calls: sendManyDefaults.calls,
    deadlineMs: client.deadlineMs,
    itemsMetric: {
      name: 'notify_gateway_get_messages_items',
      help: 'Status reads carried by each GetMessages call to dispatch-svc (1 when the gateway is not busy)',
    },
    registry,
    many: async (items, deadlineMs) => {
      const { results } = await client.call('GetMessages', { items: items.map((item) => ({ get: item.request, ...item.trace })) }, { deadlineMs });
      return results.map((result) => ({ answer: result.found, refused: result.refused }));
    },
    single: (request, deadlineMs) => client.call('GetMessage', request, { deadlineMs }),
  });
}
