// The delivery of one job the mailer holds: it checks the outcome ledger and records `sending` (together on a first
// delivery, in that order on a redelivery), renders and sends, writes the outcome to the ledger when it is final while
// it records the outcome event, and only once both have ended settles the job. A crash at any point leaves the job to
// be offered again (at-least-once), and the ledger keeps a job offered again after its delivery finished from being
// mailed a second time (see outcome-ledger.ts; the stable Message-ID lets receivers spot what still slips through).
// `sending` is confirmed by JetStream before the SMTP send starts: it is also the proof that NATS, which holds the
// ledger, is reachable, so that a mail is not sent while its outcome could not be written down (a NATS outage would
// otherwise turn every job in flight into a second email on redelivery).
//
// A test key's job (`test`) is rendered like any other, so a template that cannot render fails it just the same, but
// never reaches the relay: the attempt ends `sent` with a synthetic reply saying so, through the same events and ledger.
//
// A job that cannot be read (proto/src/messaging.ts says why) is never retried: its bytes go to the dead letters, its
// message (when it names one) ends `failed` with the reason, and it is terminated.
//
// Traces: under the job's `process` span (mailer.ts), `render`, `smtp send` (the relay's reply and enhanced status), and
// a `send` span per event published.
import { Batcher, fulfilled, inSpan, type Logger, notifyAttributes, recordFailure, type Span, SpanKind } from '@notify/platform';
import { deadLetter, type JsMsg } from '@notify/platform/nats';
import { type DeliveryEvent, type DeliveryJob, readDeliveryJob, schemaHeader } from '@notify/proto';
import { type RenderedMail, TemplateRenderError } from '@notify/templating';
import { type Decision, failureReason, judgeAttempt, type Settlement } from './decision.ts';
import { createEventPublisher, type EventPublisher } from './events.ts';
import { attemptBase, deliveryStart } from './job.ts';
import type { MailerDependencies, MailerSettings } from './mailer.ts';
import { deliveryLabels, type MailerMetrics } from './metrics.ts';
import type { FinishedDelivery } from './outcome-ledger.ts';
import { type DeliveryOutcome, enhancedStatus } from './smtp-outcome.ts';

/** A job this replica holds. `released` once it was acknowledged, offered again or terminated. */
export interface HeldJob {
  readonly msg: JsMsg;
  released: boolean;
  /** Told when the job starts and stops waiting for its destination to have room (destination-throttle.ts). */
  waiting?(waiting: boolean): void;
}

/** What a test key's message records as the relay's reply, `250 test mode: not delivered`: it was never handed to SMTP. */
const testModeReply = { smtpCode: 250, smtpResponse: 'test mode: not delivered' } as const;

/** Delay before a job whose event could not be recorded is offered again. */
export const eventFailureRetryMs = 2_000;

/** What an attempt came to, and where: a template that cannot render is the template's fault, not the relay's. */
interface Attempted {
  readonly outcome: DeliveryOutcome;
  readonly stage: 'render' | 'send';
}

/** What the ledger said before the attempt: a finished delivery (or none), or that it could not be read. */
type LedgerRead = { readonly finished: FinishedDelivery | undefined } | { readonly error: unknown };

const now = (): string => new Date().toISOString();

export class JobDelivery {
  readonly #deps: MailerDependencies;
  readonly #settings: MailerSettings;
  readonly #logger: Logger;
  readonly #metrics: MailerMetrics;
  readonly #publishEvent: EventPublisher;
  /**
   * Acknowledges the jobs settled while two rounds were being confirmed, together: each of them but the last with a
   * plain ack, the last with a double ack. The server takes a consumer's acknowledgements in the order they arrive on
   * a connection, so its answer to the last confirms them all: one round trip per batch, not per job, and a job waits
   * for at most one round before its own (events.ts says why two).
   */
  readonly #acks = new Batcher<JsMsg, void>({
    maxBatchSize: 256,
    concurrency: 2,
    async run(msgs) {
      for (const msg of msgs.slice(0, -1)) msg.ack();
      await msgs.at(-1)?.ackAck();
      return msgs.map(() => fulfilled(undefined));
    },
  });

  constructor(deps: MailerDependencies, settings: MailerSettings) {
    this.#deps = deps;
    this.#settings = settings;
    this.#logger = deps.logger;
    this.#metrics = deps.metrics;
    this.#publishEvent = createEventPublisher(deps.publisher, deps.names);
  }

  /** Delivers the job, or settles it from the ledger, and settles it; rejects only on a bug (the caller offers it again). */
  async deliver(held: HeldJob, span: Span): Promise<void> {
    const deliveryCount = held.msg.info.deliveryCount;
    const read = readDeliveryJob(held.msg.data, held.msg.headers?.get(schemaHeader) || undefined);
    const messageId = read.ok ? read.value.messageId : read.messageId;
    if (messageId !== undefined) span.setAttribute(notifyAttributes.messageId, messageId);
    if (!read.ok) return this.#refuseUnreadable(held, span, read.reason, messageId);
    const job = read.value;
    const base = attemptBase(job);
    // Attempts of a re-queued delivery continue after the earlier ones, so old events never pass for new ones.
    const attempt = base + deliveryCount;
    span.setAttribute(notifyAttributes.attempt, attempt);
    const sending: DeliveryEvent = { messageId: job.messageId, state: 'sending', attempt, occurredAt: now() };
    const [ledger, sendingRecorded] = await this.#readLedger(held, job, sending, deliveryCount);
    const settled = this.#settleFinished(held, job, base, attempt, ledger);
    if (settled !== undefined) return settled;
    if (!(sendingRecorded ?? (await this.#recordEvent(held, sending)))) return;
    // Waits for room at the recipient's domain (destination-throttle.ts); a test key's mail never reaches the relay,
    // so no limit applies. No slot: the job was given back at the shutdown deadline while it waited.
    const throttle = job.test ? undefined : this.#deps.throttle;
    const slot = await throttle?.acquire(job.to, held);
    if (throttle && slot === undefined) return;
    let attempted: Attempted | undefined;
    try {
      attempted = await this.#attempt(job, attempt);
    } finally {
      slot?.release(attempted?.outcome);
    }
    const { outcome, stage } = attempted;
    const context = { attempt: deliveryCount, ageMs: Date.now() - deliveryStart(job) };
    const decision = judgeAttempt(outcome, context, this.#settings, this.#deps.random);
    const event: DeliveryEvent = { messageId: job.messageId, attempt, occurredAt: now(), ...decision.event };
    describeEnd(span, event);
    const outcomeWritten = this.#recordOutcome(job, event, decision.event);
    this.#metrics.deliveries.inc(deliveryLabels(decision.event.state, failureReason(outcome, context, this.#settings, stage)));
    if (await this.#recordEvent(held, event, decision.settle, outcomeWritten)) this.#logFinished(job, event);
  }

  /** Acknowledges, offers again or terminates the job, once: a job already released belongs to another replica now. */
  async settle(held: HeldJob, settlement: Settlement): Promise<void> {
    if (held.released) return;
    held.released = true;
    const { msg } = held;
    if (settlement.action === 'nak') msg.nak(settlement.delayMs);
    // No reason on +TERM: servers before 2.10 do not read one and would leave the job pending. The event records why.
    else if (settlement.action === 'term') msg.term();
    else {
      // The job counts as done (its slot freed, drain() satisfied) only once the server confirmed it took the
      // acknowledgement, so an ack lost with a broken connection is logged rather than unseen (the job then comes back
      // after its ack wait and is settled from the ledger, without mailing). The round trip holds only the jobs of its
      // batch: the others keep delivering.
      await this.#acks
        .submit(msg)
        .catch((error: unknown) => this.#logger.warn({ err: error, seq: msg.seq }, 'acknowledgement not confirmed; the job may be delivered again'));
    }
  }

  /**
   * A first delivery reads the ledger and records `sending` at once (both requests leave in one write to NATS); the
   * read still decides before anything is mailed. Should it find an outcome (a job published twice, or offered again
   * as the same attempt by a NATS server that lost its latest deliveries), the delivery that wrote it recorded this
   * same attempt's `sending` first, so the event is a duplicate that is dropped. A redelivery is a new attempt, which
   * an outcome already recorded means never started: it reads first.
   */
  #readLedger(held: HeldJob, job: DeliveryJob, sending: DeliveryEvent, deliveryCount: number): Promise<[LedgerRead, boolean | undefined]> {
    return Promise.all([
      this.#deps.ledger.find(job).then(
        (finished) => ({ finished }),
        (error: unknown) => ({ error }),
      ),
      deliveryCount === 1 ? this.#recordEvent(held, sending) : undefined,
    ]);
  }

  /** Settles the job when the ledger cannot be read or says its delivery finished; undefined when it is to be attempted. */
  #settleFinished(held: HeldJob, job: DeliveryJob, base: number, attempt: number, ledger: LedgerRead): Promise<void> | undefined {
    if ('error' in ledger) {
      // Sending without knowing could mail twice; the job waits for NATS instead.
      this.#logger.error({ err: ledger.error, messageId: job.messageId }, 'outcome ledger unreadable; job will be retried');
      return this.settle(held, { action: 'nak', delayMs: eventFailureRetryMs });
    }
    const { finished } = ledger;
    // Sent is final for the message; a failure only for the delivery it ended (an operator may re-queue it).
    if (finished && finished.attempt > base) return this.#settleFromLedger(held, job.messageId, finished);
    // Sent by an earlier delivery, yet re-queued: reported as this delivery's attempt, which is the only one that can
    // still move the message.
    if (finished?.state === 'sent') {
      return this.#settleFromLedger(held, job.messageId, { ...finished, attempt, occurredAt: now(), reason: `already sent by attempt ${finished.attempt}` });
    }
    return undefined;
  }

  /**
   * Publishes the event, then settles the job (when `settlement` is given). If the event cannot be recorded, the job
   * comes back shortly instead, so no transition is ever lost. False when the event was not recorded.
   *
   * `outcomeWritten` is a ledger write started with the event (both requests then leave in one write to NATS): the job
   * is settled, and this resolves, only once it has ended, so no copy of the job can be offered before the record is.
   */
  async #recordEvent(held: HeldJob, event: DeliveryEvent, settlement?: Settlement, outcomeWritten?: Promise<void>): Promise<boolean> {
    // Given back at the shutdown deadline: the replica that takes the job over records its own attempt.
    const published = held.released
      ? undefined
      : this.#publishEvent(event).then(
          () => true,
          (error: unknown) => {
            this.#logger.error({ err: error, messageId: event.messageId, state: event.state }, 'delivery event not recorded; job will be retried');
            return false;
          },
        );
    await outcomeWritten;
    if (published === undefined) return false;
    if (!(await published)) {
      await this.settle(held, { action: 'nak', delayMs: eventFailureRetryMs });
      return false;
    }
    if (settlement !== undefined) await this.settle(held, settlement);
    return true;
  }

  /**
   * Starts writing a final outcome to the ledger; undefined for one that is not final. Even for a job given back at the
   * shutdown deadline: the record is what stops the replica that took it over.
   */
  #recordOutcome(job: DeliveryJob, event: DeliveryEvent, decided: Decision['event']): Promise<void> | undefined {
    const { state } = event;
    if (state !== 'sent' && state !== 'failed') return undefined;
    return this.#writeOutcome(job, { ...decided, state, attempt: event.attempt, occurredAt: event.occurredAt }).then(() => {
      if (state === 'sent') this.#deps.afterSend?.();
    });
  }

  /** Writes a final outcome to the ledger; a failure is logged, since the event and settlement still have to happen. */
  async #writeOutcome(job: DeliveryJob, finished: FinishedDelivery): Promise<void> {
    try {
      await this.#deps.ledger.record(job, finished, this.#settings.ackWaitMs);
    } catch (error) {
      this.#logger.error(
        { err: error, messageId: job.messageId, state: finished.state },
        'outcome not recorded in the ledger; a redelivery of this job would be attempted again',
      );
    }
  }

  async #attempt(job: DeliveryJob, attempt: number): Promise<Attempted> {
    const about = { [notifyAttributes.messageId]: job.messageId, [notifyAttributes.attempt]: attempt };
    let mail: RenderedMail;
    try {
      mail = await inSpan(
        'render',
        { attributes: { ...about, 'notify.template.slug': job.template.slug, 'notify.template.version': job.template.version } },
        () => this.#deps.renderer.render(job),
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      // The template's fault (it does not parse, fails with this data, outlived its deadline): retrying cannot help.
      // Anything else (the render pool closing at shutdown, no worker running) is ours: the job is tried again later.
      return {
        outcome: error instanceof TemplateRenderError ? { kind: 'permanent', reason } : { kind: 'temporary', reason: `not rendered: ${reason}` },
        stage: 'render',
      };
    }
    if (job.test) return { outcome: { kind: 'accepted', ...testModeReply }, stage: 'send' };
    const { sender } = this.#deps;
    const relay = { 'server.address': sender.relay.host, 'server.port': sender.relay.port };
    return inSpan('smtp send', { kind: SpanKind.CLIENT, attributes: { ...about, ...relay } }, async (span) => {
      const stopTimer = this.#metrics.sendDuration.startTimer();
      const outcome = await sender.send(job, mail);
      stopTimer({ result: outcome.kind });
      describeReply(span, outcome);
      return { outcome, stage: 'send' as const };
    });
  }

  /**
   * A job whose delivery already finished (the ledger says so) is not attempted again: its final event is published
   * once more (a duplicate the events stream or dispatch-svc drops if it was recorded) and the job settled as then.
   */
  async #settleFromLedger(held: HeldJob, messageId: number, finished: FinishedDelivery): Promise<void> {
    this.#logger.warn(
      { messageId, state: finished.state, attempt: finished.attempt, deliveryCount: held.msg.info.deliveryCount },
      'job offered again after its delivery finished; settled without mailing',
    );
    const { state, attempt, occurredAt, smtpCode, smtpResponse, reason, suppression } = finished;
    const event: DeliveryEvent = {
      messageId,
      state,
      attempt,
      occurredAt,
      ...(smtpCode === undefined ? {} : { smtpCode }),
      ...(smtpResponse === undefined ? {} : { smtpResponse }),
      ...(reason === undefined ? {} : { reason }),
      ...(suppression === undefined ? {} : { suppression }),
    };
    if (await this.#recordEvent(held, event, state === 'sent' ? { action: 'ack' } : { action: 'term' })) this.#metrics.finishedRedeliveries.inc({ state });
  }

  /** Dead-letters a job that cannot be read and fails its message when it names one; offered again if neither could be written. */
  async #refuseUnreadable(held: HeldJob, span: Span, reason: string, messageId: number | undefined): Promise<void> {
    const { msg } = held;
    recordFailure(span, new Error(reason));
    this.#logger.error({ seq: msg.seq, messageId, reason }, 'unreadable delivery job dead-lettered');
    if (!(await deadLetter(this.#deps.js, this.#deps.names.deadLettersSubject('jobs'), msg, reason))) {
      await this.settle(held, { action: 'nak', delayMs: eventFailureRetryMs });
      return;
    }
    this.#metrics.deliveries.inc(deliveryLabels('failed', 'unreadable_job'));
    if (messageId === undefined) await this.settle(held, { action: 'term' });
    else await this.#recordEvent(held, { messageId, state: 'failed', attempt: msg.info.deliveryCount, occurredAt: now(), reason }, { action: 'term' });
  }

  #logFinished(job: DeliveryJob, event: DeliveryEvent): void {
    if (event.state === 'sent') this.#metrics.latency.observe(Math.max(0, Date.now() - Date.parse(job.acceptedAt)) / 1_000);
    const level = event.state === 'sent' ? 'info' : 'warn';
    this.#logger[level](
      { messageId: job.messageId, attempt: event.attempt, state: event.state, smtpCode: event.smtpCode, reason: event.reason },
      'delivery attempt finished',
    );
  }
}

/** The attempt's end on the job's span: its state, and an error status when the message failed. */
function describeEnd(span: Span, event: DeliveryEvent): void {
  span.setAttribute(notifyAttributes.state, event.state);
  if (event.state === 'failed') recordFailure(span, new Error(event.reason ?? 'delivery failed'));
}

/** The relay's answer on the SMTP span: reply code, enhanced status and text; an error status unless accepted. */
function describeReply(span: Span, outcome: DeliveryOutcome): void {
  const status = enhancedStatus(outcome.smtpResponse);
  span.setAttributes({
    'notify.delivery.outcome': outcome.kind,
    ...(outcome.smtpCode === undefined ? {} : { [notifyAttributes.smtpReplyCode]: outcome.smtpCode }),
    ...(status === undefined ? {} : { [notifyAttributes.smtpEnhancedStatus]: status }),
    ...(outcome.smtpResponse === undefined ? {} : { [notifyAttributes.smtpReply]: outcome.smtpResponse }),
  });
  if (outcome.kind !== 'accepted') recordFailure(span, new Error(outcome.reason));
}
