// The health of one SMTP relay as a circuit breaker. Closed: mail goes to the relay. After `failureThreshold`
// consecutive connection-level failures (refused, timed out, no greeting, the session broken) it opens: the relay is
// skipped, so mail goes to the next relay of its list at once instead of each job waiting out a connection timeout.
// After `coolDownMs` it is half-open: one send is let through as a probe; its success closes the circuit, its failure
// opens it for another cool-down. A 4xx or 5xx reply to the message's envelope or content is about the message, and
// counts as a success: the relay answered.

export type CircuitState = 'closed' | 'half-open' | 'open';

/** The value of notify_relay_circuit_state. */
export const circuitStateValue: Readonly<Record<CircuitState, number>> = { closed: 0, 'half-open': 1, open: 2 };

export interface CircuitBreakerOptions {
  /** Consecutive connection-level failures that open the circuit. */
  readonly failureThreshold: number;
  /** Time an open circuit waits before it lets a probe through. */
  readonly coolDownMs: number;
  readonly now?: () => number;
}

export class CircuitBreaker {
  readonly #failureThreshold: number;
  readonly #coolDownMs: number;
  readonly #now: () => number;
  #failures = 0;
  #openedAt: number | undefined;
  #probing = false;

  constructor(options: CircuitBreakerOptions) {
    this.#failureThreshold = options.failureThreshold;
    this.#coolDownMs = options.coolDownMs;
    this.#now = options.now ?? Date.now;
  }

  /** The state now (an open circuit whose cool-down has passed is half-open). */
  state(): CircuitState {
    if (this.#openedAt === undefined) return 'closed';
    return this.#probing || this.#now() - this.#openedAt >= this.#coolDownMs ? 'half-open' : 'open';
  }

  /**
   * Whether a send may go to the relay now; a half-open circuit grants one probe at a time. Every granted send is
   * ended with exactly one of succeeded() or failed().
   */
  tryAcquire(): boolean {
    const current = this.state();
    if (current === 'closed') return true;
    if (current === 'open' || this.#probing) return false;
    this.#probing = true;
    return true;
  }

  succeeded(): void {
    this.#failures = 0;
    this.#openedAt = undefined;
    this.#probing = false;
  }

  failed(): void {
    this.#failures += 1;
    // A failed probe, or the threshold reached: a new cool-down starts now.
    if (this.#probing || this.#failures >= this.#failureThreshold) this.#openedAt = this.#now();
    this.#probing = false;
  }
}
