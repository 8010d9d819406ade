// The relays' Prometheus metrics: each relay's circuit, what it did with the sends it was offered, and the sends that
// moved on from a relay to the next of their list. Relays are labelled `host:port`, never by URL (credentials).
import { Counter, Gauge, type Registry } from '@notify/platform';
import { type CircuitState, circuitStateValue } from './circuit-breaker.ts';

export type RelayMetrics = ReturnType<typeof createRelayMetrics>;

/** What a relay did with one send, the `result` label of notify_relay_sends_total (relay-fault.ts says the last two). */
export const relaySendResults = ['accepted', 'refused', 'unreached', 'lost'] as const;

export function createRelayMetrics(registry: Registry) {
  return {
    sends: new Counter({
      name: 'notify_relay_sends_total',
      help: 'Sends offered to each SMTP relay by result: accepted, refused (a reply about the message), unreached (failed over when another relay is listed), lost (the session broke; deferred)',
      labelNames: ['relay', 'result'] as const,
      registers: [registry],
    }),
    failovers: new Counter({
      name: 'notify_relay_failovers_total',
      help: 'Sends that moved on to the next relay of their list in the same attempt, by the relay that could not be reached',
      labelNames: ['relay'] as const,
      registers: [registry],
    }),
  };
}

/** notify_relay_circuit_state, read from the relays at each scrape (an open circuit turns half-open by time alone). */
export function registerCircuitGauge(registry: Registry, states: () => { address: string; state: CircuitState }[]): void {
  new Gauge({
    name: 'notify_relay_circuit_state',
    help: "Each SMTP relay's circuit breaker: 0 closed, 1 half-open (a probe is let through), 2 open (skipped)",
    labelNames: ['relay'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { address, state } of states()) this.set({ relay: address }, circuitStateValue[state]);
    },
  });
}
