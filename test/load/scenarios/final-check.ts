// The end of every run: every message the gateway accepted must exist and have been delivered, and the sink must have
// stored at least as many mails as were reported sent. Anything else is a lost message and fails the bench.
import type { BenchContext } from './context.ts';
import { type DeliveryState, lastMessageId, waitSettled } from './message-progress.ts';

export interface FinalCheck extends DeliveryState {
  readonly accepted: number;
  readonly abandoned: number;
  readonly sinkStored: number;
  readonly waitedS: number;
}

/** `rawMails` is what the raw nodemailer baseline put into the same sink. */
export async function finalCheck(context: BenchContext, rawMails: number): Promise<FinalCheck> {
  const { system } = context;
  context.progress('final check: every accepted message delivered');
  const state = await waitSettled(system.db, { after: 0, upTo: await lastMessageId(system.db) }, context.plan.finalTimeoutMs);
  const sinkStored = await system.sink.received();
  if (state.total < context.accepted) context.failures.push(`the gateway accepted ${context.accepted} messages but the database holds only ${state.total}`);
  if (state.total > context.accepted + context.abandoned) {
    context.failures.push(
      `the database holds ${state.total} messages, more than the ${context.accepted} accepted and ${context.abandoned} abandoned requests explain`,
    );
  }
  if (state.failed > 0) context.failures.push(`${state.failed} messages ended failed`);
  if (state.pending > 0) context.failures.push(`${state.pending} accepted messages were not delivered within ${Math.round(state.waitedS)} s of the end`);
  if (sinkStored < rawMails + state.sent)
    context.failures.push(`the sink stored ${sinkStored} mails, fewer than ${rawMails} raw + ${state.sent} reported sent`);
  return { ...state, accepted: context.accepted, abandoned: context.abandoned, sinkStored };
}
