// The SMTP relays a mailer sends through: SMTP_URL's list, and the lists projects name for themselves
// (project-relays.ts). Each relay has one pooled nodemailer transport and one circuit breaker (circuit-breaker.ts),
// shared by every list that names it. A message goes to the first relay of its list whose circuit lets it through;
// when that relay cannot be reached (relay-fault.ts: `unreached`, it never had the message) the same attempt goes on
// to the next one. Any other outcome ends the attempt as it did with one relay: a broken session is deferred (the
// relay may have accepted the mail), a reply to the message is the message's. With every circuit of a list open the
// attempt is deferred without connecting. A list of one relay is always tried, exactly as before failover existed:
// there is nowhere else to send, and its breaker still shows its health.

import { type Attributes, inSpan, type Logger, SpanKind } from '@notify/platform';
import { relayAddress } from '@notify/platform/mail';
import { createTransport, type SendMailOptions, type Transporter } from 'nodemailer';
import type { ExternalLogger } from 'nodemailer/lib/shared';
import { CircuitBreaker, type CircuitState } from './circuit-breaker.ts';
import { relayFault } from './relay-fault.ts';
import type { RelayMetrics } from './relay-metrics.ts';
import { acceptedOutcome, classifySendError, type DeliveryOutcome } from './smtp-outcome.ts';

// nodemailer's defaults (2 min to connect, 10 min of socket silence) would hold a job far beyond the consumer's ack wait.
const connectionTimeoutMs = 15_000;
const greetingTimeoutMs = 15_000;
const socketTimeoutMs = 60_000;

export interface RelayOptions {
  /** SMTP_URL's relays, in order: the list of every project without its own. */
  readonly defaultUrls: readonly string[];
  /** The projects that name their own relays. */
  readonly projects: ProjectRoutes;
  /** Most SMTP connections open at once, per relay. */
  readonly poolSize: number;
  readonly failureThreshold: number;
  readonly coolDownMs: number;
  readonly metrics: RelayMetrics;
  readonly logger: Logger;
  /** nodemailer's logger for every transport (pool-refusals.ts); without one nodemailer logs nothing. */
  readonly transportLogger?: ExternalLogger;
}

export interface ProjectRoutes {
  /** A project's own relays, or undefined when it uses the default list. */
  urls(projectId: number): readonly string[] | undefined;
  /** Every relay some project names. */
  named(): Iterable<string>;
}

interface Relay {
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly transport: Transporter;
  readonly breaker: CircuitBreaker;
}

export class Relays {
  /** The first default relay (host and port only: the URL may hold credentials). */
  readonly primary: { readonly host: string; readonly port: number };
  readonly #options: RelayOptions;
  readonly #metrics: RelayMetrics;
  readonly #logger: Logger;
  readonly #relays = new Map<string, Relay>();
  /** The relay of a URL, made on first use: one function for every send's list. */
  readonly #relayFor = (url: string): Relay => this.#relays.get(url) ?? this.#open(url);

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    const primary = this.#relayFor(options.defaultUrls[0] as string);
    for (const url of options.defaultUrls) this.#relayFor(url);
    this.primary = { host: primary.host, port: primary.port };
  }

  /** Never throws: a refusal or a transport failure comes back as an outcome. `about` goes on each relay's span. */
  async send(projectId: number, message: SendMailOptions, about: Attributes = {}): Promise<DeliveryOutcome> {
    const list = (this.#options.projects.urls(projectId) ?? this.#options.defaultUrls).map(this.#relayFor);
    if (list.length === 1) return (await this.#attempt(list[0] as Relay, message, about)).outcome;
    let unreachedFrom: Relay | undefined;
    let last: DeliveryOutcome | undefined;
    for (const relay of list) {
      if (!relay.breaker.tryAcquire()) continue;
      if (unreachedFrom) this.#metrics.failovers.inc({ relay: unreachedFrom.address });
      const { outcome, unreached } = await this.#attempt(relay, message, about);
      if (!unreached) return outcome;
      unreachedFrom = relay;
      last = outcome;
    }
    return last ?? { kind: 'temporary', reason: `no relay available: the circuits of all ${list.length} relays are open` };
  }

  /** Each relay known now, by address, with its circuit's state (notify_relay_circuit_state). */
  states(): { address: string; state: CircuitState }[] {
    return [...this.#relays.values()].map((relay) => ({ address: relay.address, state: relay.breaker.state() }));
  }

  /** Closes the transports of relays no list names any more (a project's relay changed or was cleared). */
  prune(): void {
    const named = new Set([...this.#options.defaultUrls, ...this.#options.projects.named()]);
    for (const [url, relay] of this.#relays) {
      if (named.has(url)) continue;
      relay.transport.close();
      this.#relays.delete(url);
    }
  }

  close(): void {
    for (const relay of this.#relays.values()) relay.transport.close();
  }

  #open(url: string): Relay {
    const options = this.#options;
    const address = relayAddress(url);
    const transport = createTransport({
      url,
      pool: true,
      maxConnections: options.poolSize,
      // A pooled connection serves until the relay or the network ends it: nodemailer's default (100 messages) would
      // open a new connection, with its greeting, EHLO and TLS, for every hundred mails.
      maxMessages: Number.POSITIVE_INFINITY,
      connectionTimeout: connectionTimeoutMs,
      greetingTimeout: greetingTimeoutMs,
      socketTimeout: socketTimeoutMs,
      ...(options.transportLogger ? { logger: options.transportLogger } : {}),
    });
    // A pooled connection that breaks while idle is reported here; the next send opens a new one.
    transport.on('error', (error) => this.#logger.warn({ err: error, relay: address }, 'SMTP transport error'));
    const relay: Relay = {
      address,
      host: new URL(url).hostname,
      port: Number(address.slice(address.lastIndexOf(':') + 1)),
      transport,
      breaker: new CircuitBreaker({ failureThreshold: options.failureThreshold, coolDownMs: options.coolDownMs }),
    };
    this.#relays.set(url, relay);
    // Its failover count exists from the start, at zero, like its circuit's state.
    this.#metrics.failovers.inc({ relay: address }, 0);
    return relay;
  }

  /** One relay's try: its own span, its breaker told the result, a state change logged. */
  #attempt(relay: Relay, message: SendMailOptions, about: Attributes): Promise<{ outcome: DeliveryOutcome; unreached: boolean }> {
    return inSpan('smtp relay', { kind: SpanKind.CLIENT, attributes: { ...about, 'server.address': relay.host, 'server.port': relay.port } }, async () => {
      const before = relay.breaker.state();
      let result: { outcome: DeliveryOutcome; unreached: boolean };
      try {
        const info = (await relay.transport.sendMail(message)) as { response: string };
        relay.breaker.succeeded();
        this.#metrics.sends.inc({ relay: relay.address, result: 'accepted' });
        result = { outcome: acceptedOutcome(info.response), unreached: false };
      } catch (error) {
        const fault = relayFault(error);
        // Anything but a connection-level failure means the relay answered (or was never asked: nodemailer found the
        // message unsendable), which says it is healthy.
        if (fault === undefined) relay.breaker.succeeded();
        else relay.breaker.failed();
        this.#metrics.sends.inc({ relay: relay.address, result: fault ?? 'refused' });
        result = { outcome: classifySendError(error), unreached: fault === 'unreached' };
      }
      this.#logCircuitChange(relay, before);
      return result;
    });
  }

  #logCircuitChange(relay: Relay, before: CircuitState): void {
    const after = relay.breaker.state();
    if (after === before || (after !== 'open' && after !== 'closed')) return;
    if (after === 'open') this.#logger.warn({ relay: relay.address, circuit: after }, 'relay circuit opened: skipping the relay until its cool-down ends');
    else this.#logger.info({ relay: relay.address, circuit: after }, 'relay circuit closed');
  }
}
