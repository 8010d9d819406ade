// The sends one transaction judges together, and the verdict each step of acceptBatch gives them.
import { type Context, fulfilled } from '@notify/platform';
import type { AcceptedBody, dispatch } from '@notify/proto';
import type { OutgoingJob } from '../outbox/delivery-job.ts';
import type { SendInput } from './send-request.ts';

export interface Pending {
  readonly request: dispatch.SendRequest__Output;
  readonly input: SendInput;
  /** The caller's trace: a batch serves many requests, so each send's own is kept for the span of its message. */
  readonly context: Context;
}

export type Outcome =
  /** `replayableForMs`: how long the key's record stays live, from the transaction's start (toSendResponse). */
  | { readonly replay: true; readonly response: AcceptedBody; readonly replayableForMs: number }
  /** `outgoing` is null for a scheduled send: its job waits in the schedule, for the releaser. */
  | { readonly replay: false; readonly response: AcceptedBody; readonly outgoing: OutgoingJob | null; readonly organizationAccepted: number };

export const refused = (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason });

/**
 * The sends of one batch on their way through the steps of acceptBatch: a step settles the sends it refuses (or
 * answers, as a replay), and the steps after it see only the sends still open.
 */
export class BatchVerdicts {
  readonly sends: readonly Pending[];
  readonly #settled: (PromiseSettledResult<Outcome> | undefined)[];

  constructor(sends: readonly Pending[]) {
    this.sends = sends;
    this.#settled = sends.map(() => undefined);
  }

  send(index: number): Pending {
    return this.sends[index] as Pending;
  }

  /** Indexes of the sends no step has settled yet, in arrival order. */
  open(): number[] {
    return this.sends.flatMap((_, index) => (this.#settled[index] === undefined ? [index] : []));
  }

  refuse(index: number, reason: unknown): void {
    this.#settled[index] = refused(reason);
  }

  answer(index: number, outcome: Outcome): void {
    this.#settled[index] = fulfilled(outcome);
  }

  /** Every send's verdict, once the last step has settled them all. */
  results(): PromiseSettledResult<Outcome>[] {
    return this.#settled.map((result) => result ?? refused(new Error('a send of the batch was left without a verdict')));
  }
}

/** A send whose rows were written (step 5), waiting for the quota's verdict (step 6). */
export interface Written {
  readonly index: number;
  readonly messageId: number;
  readonly response: AcceptedBody;
  readonly outgoing: OutgoingJob | null;
}
