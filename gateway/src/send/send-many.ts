// The gateway's single sends reach dispatch-svc in SendMany calls, gathered as dispatch-svc gathers sends into one
// transaction (the platform's Batcher): alone, a send is a call of one; what arrives while DISPATCH_SEND_CALLS calls are
// in flight goes in the next one. Each send keeps what its own Send call had: its deadline (GRPC_DEADLINE from the
// moment it was submitted, its time queued included), its answer or the very RemoteError Send would have failed with
// (a failure of the whole call is each item's), and its client span, the parent of dispatch-svc's server span.
import { status } from '@grpc/grpc-js';
import { activeContext, Batcher, endItemSpan, Histogram, itemTraceContext, RemoteError, remoteErrorOf, SpanKind, startItemSpan, withActiveSpan, type ItemTraceContext, type Registry, type Span } from '@notify/platform';
import { dispatchProto, type dispatch } from '@notify/proto';
import type { DispatchClient } from './dispatch.ts';

export interface SendManyOptions {
  /** DISPATCH_SEND_MAX_ITEMS: sends per SendMany call at most. */
  readonly maxItems: number;
  /** DISPATCH_SEND_CALLS: SendMany calls in flight at once. */
  readonly calls: number;
}

/**
 * Up to 64 sends per call (what dispatch-svc takes into one transaction), 16 calls at once. dispatch-svc gathers the
 * sends of calls that arrive together into its own transactions (4 at once), so more calls in flight cost only their
 * smaller size (about 4 sends each at 64 connections instead of about 21 with 4 calls); and a send the gateway holds
 * back waiting for a call slot has not reached dispatch-svc: should that stop (one replica restarting), such a send is
 * answered 503 like one that arrived after it stopped, where a send already in a call is committed and answered.
 * With 16, sixteen sends at once each reach dispatch-svc as soon as they are ready, as their own calls did.
 */
export const sendManyDefaults: SendManyOptions = { maxItems: 64, calls: 16 };

const sendPath = dispatchProto.DispatchService.service.Send.path;

interface Queued {
  readonly request: dispatch.SendRequest;
  /** Date.now() past which its own Send call would have failed. */
  readonly deadline: number;
  readonly span: Span;
  readonly trace: ItemTraceContext;
}

type Settled = PromiseSettledResult<dispatch.SendResponse__Output>;

function settledOf(result: dispatch.SendBatchResult__Output | undefined): Settled {
  if (result?.accepted) return { status: 'fulfilled', value: result.accepted };
  if (result?.refused) return { status: 'rejected', reason: remoteErrorOf({ code: result.refused.code, reason: result.refused.reason, fields: result.refused.fields }) };
  return { status: 'rejected', reason: new Error('SendMany answered a send with no outcome') };
}

export class SendDispatcher {
  readonly #client: DispatchClient;
  readonly #batcher: Batcher<Queued, dispatch.SendResponse__Output>;
  readonly #itemsPerCall: Histogram<string>;

  constructor(client: DispatchClient, options: SendManyOptions & { readonly registry: Registry }) {
    this.#client = client;
    this.#batcher = new Batcher({ maxBatchSize: options.maxItems, concurrency: options.calls, run: (items) => this.#call(items) });
    this.#itemsPerCall = new Histogram({
      name: 'notify_gateway_send_many_items',
      help: 'Sends carried by each SendMany call to dispatch-svc (1 when the gateway is not busy)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 500],
      registers: [options.registry],
    });
  }

  /**
   * Resolves with Send's answer, or rejects with the RemoteError a Send call of its own would have rejected with. A
   * queued send waits only for calls in flight, each bound by the deadline of a send queued before it: it leaves by
   * its own deadline, with what is left of it.
   */
  async send(request: dispatch.SendRequest): Promise<dispatch.SendResponse__Output> {
    const span = startItemSpan(sendPath, SpanKind.CLIENT, activeContext());
    try {
      const response = await this.#batcher.submit({ request, deadline: Date.now() + this.#client.deadlineMs, span, trace: itemTraceContext(span) });
      endItemSpan(span, status.OK);
      return response;
    } catch (error) {
      endItemSpan(span, error instanceof RemoteError ? error.status : status.UNKNOWN, error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  /** One call for `items`, whose deadline is the first one's (the earliest: they queued in order). */
  async #call(items: readonly Queued[]): Promise<Settled[]> {
    this.#itemsPerCall.observe(items.length);
    const first = items[0] as Queued;
    try {
      const response = await this.#client.call('SendMany', { items: items.map((item) => ({ send: item.request, ...item.trace })) }, { deadlineMs: first.deadline - Date.now() });
      return items.map((_, index) => settledOf(response.results[index]));
    } catch (error) {
      if (!(error instanceof RemoteError && error.status === status.UNIMPLEMENTED)) throw error;
      // A dispatch-svc of a release before SendMany (during a rolling upgrade): each send as a call of its own.
      return Promise.allSettled(items.map((item) => withActiveSpan(item.span, () => this.#client.call('Send', item.request, { deadlineMs: item.deadline - Date.now() }))));
    }
  }
}
