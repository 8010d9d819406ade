// JetStream's duplicate window on the jobs stream, and the outbox relay's timing that must fit inside it. The relay
// republishes a row whose job the stream may already hold (stored, but its PubAck or its row's delete was lost) once
// the row is OUTBOX_RELAY_MIN_AGE old, on a pass every OUTBOX_RELAY_INTERVAL; that second copy is dropped only while
// the first is younger than the window. Beyond it (both NATS and PostgreSQL in trouble for minutes), the mailer's
// outcome ledger is what keeps a second job from becoming a second email (docs/delivery-guarantees.md).
import { duplicateWindowMs } from '@notify/proto';
import { publishTimeoutMs } from './job-publisher.ts';

/** The latest a relay republish can follow the first publish, with the window's margin for a slow pass: twice over. */
export function relayRepublishBoundMs(minAgeMs: number, intervalMs: number): number {
  return 2 * (minAgeMs + intervalMs + publishTimeoutMs);
}

/** Throws at start when the relay's timing would let its republish of a job fall outside the duplicate window. */
export function assertRelayFitsDuplicateWindow(minAgeMs: number, intervalMs: number, windowMs = duplicateWindowMs): void {
  if (relayRepublishBoundMs(minAgeMs, intervalMs) > windowMs) {
    throw new Error(
      `OUTBOX_RELAY_MIN_AGE (${minAgeMs} ms) + OUTBOX_RELAY_INTERVAL (${intervalMs} ms) must stay under ${Math.floor(windowMs / 2_000 - publishTimeoutMs / 1_000)} s, ` +
        `so that the relay republishes a job within JetStream's ${windowMs / 1_000} s duplicate window with room to spare`,
    );
  }
}
