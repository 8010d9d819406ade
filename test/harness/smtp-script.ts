// A controllable SMTP relay for the reliability suites: how the run's SMTP sink answers each recipient, decided by the
// first rule whose prefix the address starts with. A rule may hold the answer back until the test releases it (a
// relay too slow to answer, so a mailer holds the job), refuse temporarily for the first N offers (4xx), refuse for
// good (5xx), or refuse every Nth offer to its recipients (a destination that pushes back under load). Pass `script.reply` as startSystem's `smtpReply`; `replaceSink` stops and restarts the sink itself.
import { type SinkEnvelope, type SinkReply, type SmtpSink, startSmtpSink } from '@notify/cli/local';
import { silentLogger } from './logger.ts';
import type { System } from './system.ts';

type Rule =
  | { kind: 'hold'; gate: Promise<void>; release: () => void }
  | { kind: 'refuse'; reply: SinkReply; times: number }
  | { kind: 'every'; reply: SinkReply; nth: number; offered: number };

export class SmtpScript {
  readonly #rules = new Map<string, Rule>();
  readonly #offers = new Map<string, number>();
  #waiting = 0;

  /** Answers for recipients starting with `prefix` wait until `release(prefix)`. */
  hold(prefix: string): void {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#rules.set(prefix, { kind: 'hold', gate: promise, release: resolve });
  }

  /** Refuses recipients starting with `prefix` with `reply` for their first `times` offers (Infinity: always). */
  refuse(prefix: string, reply: SinkReply, times = Number.POSITIVE_INFINITY): void {
    this.#rules.set(prefix, { kind: 'refuse', reply, times });
  }

  /** Refuses every `nth` offer to recipients starting with `prefix` (counted over all of them) with `reply`. */
  refuseEvery(prefix: string, reply: SinkReply, nth: number): void {
    this.#rules.set(prefix, { kind: 'every', reply, nth, offered: 0 });
  }

  /** Lets held answers go, and accepts those recipients from now on. */
  release(prefix: string): void {
    const rule = this.#rules.get(prefix);
    this.#rules.delete(prefix);
    if (rule?.kind === 'hold') rule.release();
  }

  /** Accepts recipients starting with `prefix` from now on. */
  clear(prefix: string): void {
    this.release(prefix);
  }

  /** How many times the sink was offered this recipient (RCPT TO). */
  offers(address: string): number {
    return this.#offers.get(address) ?? 0;
  }

  /** Answers being held back right now. */
  get waiting(): number {
    return this.#waiting;
  }

  readonly reply = async (envelope: SinkEnvelope): Promise<SinkReply | undefined> => {
    const offered = this.offers(envelope.to) + 1;
    this.#offers.set(envelope.to, offered);
    const prefix = [...this.#rules.keys()].find((candidate) => envelope.to.startsWith(candidate));
    const rule = prefix === undefined ? undefined : this.#rules.get(prefix);
    if (rule?.kind === 'hold') {
      this.#waiting += 1;
      await rule.gate.finally(() => (this.#waiting -= 1));
      return undefined;
    }
    if (rule?.kind === 'refuse' && offered <= rule.times) return rule.reply;
    if (rule?.kind === 'every') {
      rule.offered += 1;
      if (rule.offered % rule.nth === 0) return rule.reply;
    }
    return undefined;
  };
}

/** The run's SMTP sink, closed (connections refused, as when a relay is down) and restarted on the same port and folder. */
export interface ReplaceableSink {
  /** Stops the sink that answers now. */
  stop(): Promise<void>;
  /** Starts a sink on the same port, folder and script. */
  start(): Promise<void>;
  /** Stops a sink this helper started; the system stops its own. */
  close(): Promise<void>;
}

export function replaceableSink(system: System, script: SmtpScript): ReplaceableSink {
  let current: SmtpSink | undefined = system.sink;
  let own: SmtpSink | undefined;
  return {
    async stop() {
      await current?.close();
      current = undefined;
    },
    async start() {
      own = await startSmtpSink({
        host: '127.0.0.1',
        port: system.sink.port,
        dir: system.resources.mailDir,
        logger: silentLogger('smtp-sink'),
        reply: script.reply,
      });
      current = own;
    },
    async close() {
      await own?.close();
    },
  };
}
