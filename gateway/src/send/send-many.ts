// The gateway's single sends reach dispatch-svc in SendMany calls, gathered as dispatch-svc gathers sends into one
// transaction (the platform's BatchedCalls): alone, a send is a call of one; what arrives while DISPATCH_SEND_CALLS
// calls are in flight goes in the next one. Each send keeps what its own Send call had: its deadline (GRPC_DEADLINE
// from the moment it was submitted, its time queued included), its answer or the very RemoteError Send would have
// failed with (a failure of the whole call is each item's), and its client span, the parent of dispatch-svc's server span.
import { BatchedCalls, type Registry } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import type { DispatchClient } from './dispatch.ts';

export interface SendManyOptions {
  /** DISPATCH_SEND_MAX_ITEMS: sends per SendMany call at most. */
  readonly maxItems: number;
  /** DISPATCH_SEND_CALLS: SendMany calls in flight at once. */
  readonly calls: number;
}

/**
 * Up to 64 sends per call (what dispatch-svc takes into one transaction), 16 calls at once. dispatch-svc gathers the
 * sends of calls that arrive together into its own transactions (one at a time), so more calls in flight cost only their
 * smaller size (about 4 sends each at 64 connections instead of about 21 with 4 calls); and a send the gateway holds
 * back waiting for a call slot has not reached dispatch-svc: should that stop (one replica restarting), such a send is
 * answered 503 like one that arrived after it stopped, where a send already in a call is committed and answered.
 * With 16, sixteen sends at once each reach dispatch-svc as soon as they are ready, as their own calls did.
 */
export const sendManyDefaults: SendManyOptions = { maxItems: 64, calls: 16 };

/**
 * The sends one SendMany call may carry: `maxItems`, or fewer when that many bodies of the largest size could pass
 * `maxCallBytes` (the gRPC message they travel in must hold them all).
 */
export function sendManyItems(maxItems: number, maxBodyBytes: number, maxCallBytes: number): number {
  return Math.max(1, Math.min(maxItems, Math.floor(maxCallBytes / maxBodyBytes)));
}

export type SendDispatcher = BatchedCalls<dispatch.SendRequest, dispatch.SendResponse__Output>;

export function sendDispatcher(client: DispatchClient, options: SendManyOptions & { readonly registry: Registry }): SendDispatcher {
  return new BatchedCalls({
    path: dispatchProto.DispatchService.service.Send.path,
    maxItems: options.maxItems,
    calls: options.calls,
    deadlineMs: client.deadlineMs,
    itemsMetric: { name: 'notify_gateway_send_many_items', help: 'Sends carried by each SendMany call to dispatch-svc (1 when the gateway is not busy)' },
    registry: options.registry,
    many: async (items, deadlineMs) => {
      const { results } = await client.call('SendMany', { items: items.map((item) => ({ send: item.request, ...item.trace })) }, { deadlineMs });
      return results.map((result) => ({ answer: result.accepted, refused: result.refused }));
    },
    single: (request, deadlineMs) => client.call('Send', request, { deadlineMs }),
  });
}
