// Reading a DeliveryEvent off the wire. The mailer is trusted but a different deployment: anything that does not match
// the contract in proto/src/messaging.ts is refused here rather than half-written to the database.
import type { DeliveryEvent, DeliveryState } from '@notify/proto';

/** Thrown when an event's bytes are not a DeliveryEvent; redelivering it would never help, so it is terminated. */
export class MalformedEventError extends Error {
  override name = 'MalformedEventError';
}

const deliveryStates: readonly DeliveryState[] = ['sending', 'deferred', 'sent', 'failed'];
const int4Max = 2_147_483_647;
/** Longer SMTP replies and reasons are cut: the row is for reading, not an archive of a misbehaving relay. */
const maxTextLength = 2_000;

function optionalText(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new MalformedEventError(`${name} must be a string`);
  return value.slice(0, maxTextLength);
}

export function parseDeliveryEvent(bytes: Uint8Array): DeliveryEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw new MalformedEventError('not UTF-8 JSON', { cause: error });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new MalformedEventError('not a JSON object');
  const event = raw as Record<string, unknown>;
  const { messageId, state, attempt, occurredAt, smtpCode } = event;
  if (typeof messageId !== 'number' || !Number.isSafeInteger(messageId) || messageId < 1) throw new MalformedEventError('messageId must be a positive integer');
  if (typeof state !== 'string' || !(deliveryStates as readonly string[]).includes(state)) throw new MalformedEventError(`state must be one of ${deliveryStates.join(', ')}`);
  if (typeof attempt !== 'number' || !Number.isInteger(attempt) || attempt < 1 || attempt > int4Max) throw new MalformedEventError('attempt must be a positive integer');
  if (typeof occurredAt !== 'string' || Number.isNaN(Date.parse(occurredAt))) throw new MalformedEventError('occurredAt must be a timestamp');
  if (smtpCode !== undefined && smtpCode !== null && (typeof smtpCode !== 'number' || !Number.isInteger(smtpCode) || smtpCode < 100 || smtpCode > 599)) {
    throw new MalformedEventError('smtpCode must be an SMTP reply code');
  }
  const smtpResponse = optionalText(event['smtpResponse'], 'smtpResponse');
  const reason = optionalText(event['reason'], 'reason');
  return {
    messageId,
    state: state as DeliveryState,
    attempt,
    occurredAt: new Date(occurredAt).toISOString(),
    ...(typeof smtpCode === 'number' ? { smtpCode } : {}),
    ...(smtpResponse === undefined ? {} : { smtpResponse }),
    ...(reason === undefined ? {} : { reason }),
  };
}
