// The mailer's work loop: pulls jobs from the shared durable consumer and delivers up to `concurrency` at once.
// For each job it checks the outcome ledger, records `sending`, renders and sends, writes the outcome to the ledger
// when it is final, records the outcome event, and only then settles the job. A crash at any point leaves the job to
// be offered again (at-least-once), and the ledger keeps a job offered again after its delivery finished from being
// mailed a second time (see outcome-ledger.ts; the stable Message-ID lets receivers spot what still slips through).
// `sending` is confirmed by JetStream before the SMTP send starts: it is also the proof that NATS, which holds the
// ledger, is reachable, so that a mail is not sent while its outcome could not be written down (a NATS outage would
// otherwise turn every job in flight into a second email on redelivery).
//
// It pulls with fetch() for exactly its free slots rather than consume(): consume() asks for more as soon as messages
// arrive, not as they are finished, so a busy replica would hoard jobs whose ack wait runs out in its buffer. Asking
// only for free slots bounds what each replica holds, which lets the consumer's max_ack_pending stay large enough for
// jobs waiting out a retry delay (a delayed nak keeps its job pending on the server). A busy replica pulls again once a
// quarter of its slots are free, not at each free slot: one pull request (and its subscription) per few jobs rather
// than one per job, while the other slots keep delivering.
//
// Traces: each job received is a `process` span, the child of the context its headers carry (the message's create span
// in dispatch-svc), so every attempt, a retry hours later included, continues the trace of the request that accepted
// it. Under it: `render`, `smtp send` (the relay's reply and enhanced status), and a `send` span per event published.
import { setTimeout as sleep } from 'node:timers/promises';
import type { DeliveryEvent } from '@notify/proto';
import { inSpan, notifyAttributes, recordFailure, SpanKind, withActiveSpan, type Logger, type Span } from '@notify/platform';
import { carriedContext, startProcessSpan, type JetStreamClient, type JsMsg, type Topology } from '@notify/platform/nats';
import type { Renderer } from '@notify/templating';
import { decide, type RetryPolicy, type Settlement } from './decision.ts';
import { createEventPublisher } from './events.ts';
import { attemptBase, deliveryStart, parseJob, type MailerJob } from './job.ts';
import type { MailSender } from './mail-sender.ts';
import type { MailerMetrics } from './metrics.ts';
import type { FinishedDelivery, OutcomeLedger } from './outcome-ledger.ts';
import { enhancedStatus, type DeliveryOutcome } from './smtp-outcome.ts';

export interface MailerSettings extends RetryPolicy {
  concurrency: number;
  ackWaitMs: number;
}

export interface MailerDependencies {
  js: JetStreamClient;
  names: Topology;
  renderer: Renderer;
  sender: MailSender;
  ledger: OutcomeLedger;
  metrics: MailerMetrics;
  logger: Logger;
  /** Jitter source for retry delays. */
  random?: () => number;
  /**
   * Test-only fault injection (NOTIFY_TEST_FAULT=exit-after-send): called once the relay accepted a message and the
   * ledger recorded it, before the `sent` event and the acknowledgement, to crash the replica at that point.
   */
  afterSend?: () => void;
}

export interface Mailer {
  /** Stops pulling jobs; those already held keep being delivered. */
  stopIntake(): void;
  /** Resolves when every held job is settled. At the deadline, returns unfinished jobs to the queue for another replica. */
  drain(deadlineMs: number): Promise<void>;
}

/** Delay before a job whose event could not be recorded is offered again. */
const eventFailureRetryMs = 2_000;
/**
 * Delay before a job given back by a stopping replica is offered again: long enough for this replica's connection, and
 * the pull request still open on it, to be gone. NATS 2.9 redelivers a job handed back at once (a plain nak) while
 * that request is open twice, to two replicas at the same moment, which no ledger check can catch.
 */
const handBackDelayMs = 1_000;
/** Pause before pulling again after a pull failed. */
const resumeDelayMs = 1_000;
/** How long one pull request waits for jobs on an idle stream. */
const fetchExpiresMs = 10_000;

/** A job this replica holds. `released` once it was acknowledged, offered again or terminated. */
interface Held {
  released: boolean;
  done: Promise<void>;
}

export async function startMailer(deps: MailerDependencies, settings: MailerSettings): Promise<Mailer> {
  const { logger, metrics } = deps;
  const consumer = await deps.js.consumers.get(deps.names.jobsStream, deps.names.mailerConsumer);
  const publishEvent = createEventPublisher(deps.js, deps.names);
  const held = new Map<JsMsg, Held>();
  /** Stream sequences of the jobs held, so a second copy of one (see handBackDelayMs) is never worked on in parallel. */
  const heldSeqs = new Set<number>();
  let stopping = false;
  let batch: Awaited<ReturnType<typeof consumer.fetch>> | undefined;
  /** Aborted when intake stops: cuts short the pause after a failed pull. */
  const intake = new AbortController();
  /**
   * Settles when a held job is finished or intake stops, and is then replaced by a fresh one. The pull loop waits on it
   * for a free slot: racing the held jobs and a promise that only settles at shutdown instead would leave one reaction
   * on that promise for every job ever delivered.
   */
  let slotFreed = Promise.withResolvers<void>();
  const wakeLoop = (): void => {
    slotFreed.resolve();
    slotFreed = Promise.withResolvers<void>();
  };

  const settle = async (msg: JsMsg, entry: Held, settlement: Settlement): Promise<void> => {
    // A job given back at the shutdown deadline belongs to another replica now.
    if (entry.released) return;
    entry.released = true;
    if (settlement.action === 'nak') msg.nak(settlement.delayMs);
    // No reason on +TERM: servers before 2.10 do not read one and would leave the job pending. The event records why.
    else if (settlement.action === 'term') msg.term();
    else {
      // A double ack: the job counts as done (its slot freed, drain() satisfied) only once the server confirmed it took
      // the acknowledgement, so an ack lost with a broken connection is logged rather than unseen (the job then comes
      // back after its ack wait and is settled from the ledger, without mailing). The round trip holds only this job's
      // slot: each held job settles in its own chain, so the others keep delivering and the pull loop refills every
      // other free slot meanwhile.
      await msg.ackAck().catch((error: unknown) => logger.warn({ err: error, seq: msg.seq }, 'acknowledgement not confirmed; the job may be delivered again'));
    }
  };

  /**
   * Publishes the event, then settles the job (when `settlement` is given). If the event cannot be recorded, the job
   * comes back shortly instead, so no transition is ever lost.
   */
  const record = async (msg: JsMsg, entry: Held, event: DeliveryEvent, settlement?: Settlement): Promise<boolean> => {
    // Given back at the shutdown deadline: the replica that takes the job over records its own attempt.
    if (entry.released) return false;
    try {
      await publishEvent(event);
    } catch (error) {
      logger.error({ err: error, messageId: event.messageId, state: event.state }, 'delivery event not recorded; job will be retried');
      await settle(msg, entry, { action: 'nak', delayMs: eventFailureRetryMs });
      return false;
    }
    if (settlement === undefined) return true;
    await settle(msg, entry, settlement);
    return true;
  };

  const attemptDelivery = async (job: MailerJob, attempt: number): Promise<DeliveryOutcome> => {
    const about = { [notifyAttributes.messageId]: job.messageId, [notifyAttributes.attempt]: attempt };
    let mail;
    try {
      mail = await inSpan('render', { attributes: { ...about, 'notify.template.slug': job.template.slug, 'notify.template.version': job.template.version } }, () => deps.renderer.render(job));
    } catch (error) {
      return { kind: 'permanent', reason: error instanceof Error ? error.message : String(error) };
    }
    const relay = { 'server.address': deps.sender.relay.host, 'server.port': deps.sender.relay.port };
    return inSpan('smtp send', { kind: SpanKind.CLIENT, attributes: { ...about, ...relay } }, async (span) => {
      const stopTimer = metrics.sendDuration.startTimer();
      const outcome = await deps.sender.send(job, mail);
      stopTimer({ result: outcome.kind });
      describeReply(span, outcome);
      return outcome;
    });
  };

  /**
   * A job whose delivery already finished (the ledger says so) is not attempted again: its final event is published
   * once more (a duplicate the events stream or dispatch-svc drops if it was recorded) and the job settled as then.
   */
  const settleFinished = async (msg: JsMsg, entry: Held, messageId: number, finished: FinishedDelivery): Promise<void> => {
    logger.warn({ messageId, state: finished.state, attempt: finished.attempt, deliveryCount: msg.info.deliveryCount }, 'job offered again after its delivery finished; settled without mailing');
    const { state, attempt, occurredAt, smtpCode, smtpResponse, reason } = finished;
    const event: DeliveryEvent = {
      messageId,
      state,
      attempt,
      occurredAt,
      ...(smtpCode === undefined ? {} : { smtpCode }),
      ...(smtpResponse === undefined ? {} : { smtpResponse }),
      ...(reason === undefined ? {} : { reason }),
    };
    if (await record(msg, entry, event, state === 'sent' ? { action: 'ack' } : { action: 'term' })) metrics.finishedRedeliveries.inc({ state });
  };

  /** Writes a final outcome to the ledger; a failure is logged, since the event and settlement still have to happen. */
  const remember = async (messageId: number, finished: FinishedDelivery): Promise<void> => {
    try {
      await deps.ledger.record(messageId, finished, settings.ackWaitMs);
    } catch (error) {
      logger.error({ err: error, messageId, state: finished.state }, 'outcome not recorded in the ledger; a redelivery of this job would be attempted again');
    }
  };

  const deliver = async (msg: JsMsg, entry: Held, span: Span): Promise<void> => {
    const deliveryCount = msg.info.deliveryCount;
    const now = (): string => new Date().toISOString();
    const parsed = parseJob(msg.data);
    if (parsed.ok || parsed.messageId !== undefined) span.setAttribute(notifyAttributes.messageId, parsed.ok ? parsed.job.messageId : (parsed.messageId as number));
    if (!parsed.ok) {
      recordFailure(span, new Error(parsed.reason));
      logger.error({ seq: msg.seq, messageId: parsed.messageId, reason: parsed.reason }, 'unreadable delivery job');
      metrics.deliveries.inc({ outcome: 'failed' });
      if (parsed.messageId !== undefined) {
        await record(msg, entry, { messageId: parsed.messageId, state: 'failed', attempt: deliveryCount, occurredAt: now(), reason: parsed.reason }, { action: 'term' });
      } else {
        await settle(msg, entry, { action: 'term' });
      }
      return;
    }
    const job = parsed.job;
    const base = attemptBase(job);
    // Attempts of a re-queued delivery continue after the earlier ones, so old events never pass for new ones.
    const attempt = base + deliveryCount;
    span.setAttribute(notifyAttributes.attempt, attempt);
    let finished: FinishedDelivery | undefined;
    try {
      finished = await deps.ledger.find(job.messageId);
    } catch (error) {
      // Sending without knowing could mail twice; the job waits for NATS instead.
      logger.error({ err: error, messageId: job.messageId }, 'outcome ledger unreadable; job will be retried');
      await settle(msg, entry, { action: 'nak', delayMs: eventFailureRetryMs });
      return;
    }
    // Sent is final for the message; a failure only for the delivery it ended (an operator may re-queue it).
    if (finished && finished.attempt > base) {
      await settleFinished(msg, entry, job.messageId, finished);
      return;
    }
    if (finished?.state === 'sent') {
      // Sent by an earlier delivery, yet re-queued: reported as this delivery's attempt, which is the only one that
      // can still move the message.
      await settleFinished(msg, entry, job.messageId, { ...finished, attempt, occurredAt: now(), reason: `already sent by attempt ${finished.attempt}` });
      return;
    }
    if (!(await record(msg, entry, { messageId: job.messageId, state: 'sending', attempt, occurredAt: now() }))) return;
    const outcome = await attemptDelivery(job, attempt);
    const decision = decide(outcome, { attempt: deliveryCount, ageMs: Date.now() - deliveryStart(job) }, settings, deps.random);
    const event: DeliveryEvent = { messageId: job.messageId, attempt, occurredAt: now(), ...decision.event };
    span.setAttribute(notifyAttributes.state, event.state);
    if (event.state === 'failed') recordFailure(span, new Error(event.reason ?? 'delivery failed'));
    if (event.state === 'sent' || event.state === 'failed') {
      // Even for a job given back at the shutdown deadline: the record is what stops the replica that took it over.
      await remember(job.messageId, { ...decision.event, state: event.state, attempt, occurredAt: event.occurredAt });
      if (event.state === 'sent') deps.afterSend?.();
    }
    metrics.deliveries.inc({ outcome: event.state });
    if (await record(msg, entry, event, decision.settle)) {
      if (event.state === 'sent') metrics.latency.observe(Math.max(0, Date.now() - Date.parse(job.acceptedAt)) / 1_000);
      const level = event.state === 'sent' ? 'info' : 'warn';
      logger[level]({ messageId: job.messageId, attempt, state: event.state, smtpCode: event.smtpCode, reason: event.reason }, 'delivery attempt finished');
    }
  };

  const hold = (msg: JsMsg): void => {
    if (heldSeqs.has(msg.seq)) {
      // The copy being delivered settles the job; this one is left alone (settling it would settle that one too).
      logger.warn({ seq: msg.seq, deliveryCount: msg.info.deliveryCount }, 'second copy of a job this replica is delivering ignored');
      return;
    }
    heldSeqs.add(msg.seq);
    const entry: Held = { released: false, done: Promise.resolve() };
    metrics.inFlight.inc();
    // Tells the server the job is still being worked on, so a slow relay does not get it redelivered elsewhere.
    const heartbeat = setInterval(() => entry.released || msg.working(), Math.max(1_000, Math.floor(settings.ackWaitMs / 3)));
    const span = startProcessSpan(
      {
        destination: msg.subject,
        messageId: msg.headers?.get('Nats-Msg-Id') || String(msg.seq),
        attributes: { 'messaging.consumer.group.name': deps.names.mailerConsumer, 'messaging.nats.delivery_count': msg.info.deliveryCount },
      },
      carriedContext(msg.headers),
    );
    entry.done = withActiveSpan(span, () => deliver(msg, entry, span))
      .catch(async (error: unknown) => {
        recordFailure(span, error);
        logger.error({ err: error, seq: msg.seq }, 'delivery crashed; job will be retried');
        await settle(msg, entry, { action: 'nak', delayMs: eventFailureRetryMs });
      })
      .finally(() => {
        span.end();
        clearInterval(heartbeat);
        held.delete(msg);
        heldSeqs.delete(msg.seq);
        metrics.inFlight.dec();
        wakeLoop();
      });
    held.set(msg, entry);
  };

  const refillSlots = Math.ceil(settings.concurrency / 4);
  const waitForSlots = async (): Promise<void> => {
    while (settings.concurrency - held.size < refillSlots && !stopping) await slotFreed.promise;
  };

  const loop = (async () => {
    while (!stopping) {
      await waitForSlots();
      if (stopping) break;
      try {
        batch = await consumer.fetch({ max_messages: settings.concurrency - held.size, expires: fetchExpiresMs });
        if (stopping) batch.stop();
        for await (const msg of batch) {
          // A job that arrives as intake stops goes back for another replica.
          if (stopping) msg.nak(handBackDelayMs);
          else hold(msg);
        }
      } catch (error) {
        logger.error({ err: error }, 'pulling delivery jobs failed; retrying');
        // Rejects only when intake stops, which ends the loop.
        await sleep(resumeDelayMs, undefined, { signal: intake.signal }).catch(() => undefined);
      }
    }
  })();

  const stopIntake = (): void => {
    stopping = true;
    intake.abort();
    wakeLoop();
    batch?.stop();
  };

  return {
    stopIntake,
    async drain(deadlineMs) {
      stopIntake();
      const finished = (async () => {
        await loop;
        await Promise.all([...held.values()].map((entry) => entry.done));
      })();
      const timer = sleep(deadlineMs, 'deadline' as const, { ref: false });
      if ((await Promise.race([finished.then(() => 'finished' as const), timer])) === 'finished') return;
      let returned = 0;
      for (const [msg, entry] of held) {
        if (entry.released) continue;
        entry.released = true;
        msg.nak(handBackDelayMs);
        returned += 1;
      }
      logger.warn({ returned }, 'shutdown deadline reached; unfinished jobs returned to the queue');
      await loop;
    },
  };
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
