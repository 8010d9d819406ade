// Clients that send without pause while a test kills things, each as the contract asks a client to behave: a send is
// retried with its Idempotency-Key after a 503 (a dependency down) or a 409 (the first try still in dispatch-svc), or
// when it got no answer, until it is accepted or `giveUpMs` has passed. Every accepted message id is kept for the audit.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { System, Tenant } from './system.ts';

export interface Tally {
  accepted: number[];
  /** Sends given up after giveUpMs of 503s or no answer: never promised, so not audited. */
  abandoned: number;
  /** 503s and unanswered requests that a retry then settled. */
  retried: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `count` clients sending `template` to the tenant until `stop`; resolves once all of them have stopped. */
export async function sendSteadily(
  system: System,
  tenant: Tenant,
  options: { count: number; stop: AbortSignal; tally: Tally; template?: string; giveUpMs?: number },
): Promise<void> {
  const giveUpMs = options.giveUpMs ?? 30_000;
  const client = async (index: number): Promise<void> => {
    let n = 0;
    while (!options.stop.aborted) {
      n += 1;
      const key = randomUUID();
      const payload = { template: options.template ?? 'welcome', to: `c${index}-${n}@example.com`, channel: 'email', data: { name: `Client ${index}` } };
      const started = Date.now();
      for (;;) {
        const response = await system.send(tenant, payload, { 'idempotency-key': key }).catch(() => undefined);
        if (response?.status === 202) {
          options.tally.accepted.push(response.body.message_id as number);
          break;
        }
        if (response && response.status !== 503 && response.status !== 409) assert.fail(`unexpected ${response.status}: ${response.text}`);
        if (Date.now() - started > giveUpMs) {
          options.tally.abandoned += 1;
          break;
        }
        options.tally.retried += 1;
        await pause(250);
      }
    }
  };
  await Promise.all(Array.from({ length: options.count }, (_, index) => client(index)));
}
