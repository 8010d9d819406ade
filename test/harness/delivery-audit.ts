// What became of accepted messages, from both ends: the emails the SMTP sink stored (counted per Notify message id,
// so a duplicate shows) and the state dispatch-svc recorded. The reliability and chaos suites assert on this.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { topology } from '@notify/proto';
import type pg from 'pg';
import { waitFor } from './wait.ts';

/** Emails stored per message id (X-Notify-Message-Id), read from the raw files: fast enough for thousands. */
export function mailCounts(dir: string): Map<number, number> {
  const counts = new Map<number, number>();
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.eml')) continue;
    const match = /^X-Notify-Message-Id: (\d+)\r?$/im.exec(readFileSync(join(dir, name), 'latin1'));
    if (!match) continue;
    const id = Number(match[1]);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

export async function statesOf(db: pg.Pool, ids: readonly number[]): Promise<Map<number, string>> {
  const { rows } = await db.query<{ id: number; state: string }>('SELECT id, state FROM messages WHERE id = ANY($1::bigint[])', [ids]);
  return new Map(rows.map((row) => [Number(row.id), row.state]));
}

/** Waits until every message is in one of `states` (by default the final ones); returns the states. */
export async function waitForStates(
  db: pg.Pool,
  ids: readonly number[],
  options: { timeoutMs: number; states?: readonly string[]; what?: string },
): Promise<Map<number, string>> {
  const wanted = options.states ?? ['sent', 'failed'];
  return waitFor(
    async () => {
      const states = await statesOf(db, ids);
      return ids.every((id) => wanted.includes(states.get(id) ?? '')) ? states : undefined;
    },
    { timeoutMs: options.timeoutMs, intervalMs: 250, what: options.what ?? `${ids.length} messages to reach ${wanted.join(' or ')}` },
  );
}

export interface Audit {
  accepted: number;
  /** Sent, with exactly one email. */
  delivered: number;
  /** Failed, with no email. */
  failed: number;
  /** Emails beyond the first for a message. */
  duplicates: number;
  /** Ids whose outcome breaks the promise: sent without an email, failed with one, or still in flight. */
  broken: { id: number; state: string; emails: number }[];
}

/** Every accepted message must have exactly one email and be `sent`, or none and be `failed`. */
export async function audit(db: pg.Pool, mailDir: string, ids: readonly number[]): Promise<Audit> {
  const states = await statesOf(db, ids);
  const mails = mailCounts(mailDir);
  const result: Audit = { accepted: ids.length, delivered: 0, failed: 0, duplicates: 0, broken: [] };
  for (const id of ids) {
    const state = states.get(id) ?? 'missing';
    const emails = mails.get(id) ?? 0;
    result.duplicates += Math.max(0, emails - 1);
    if (state === 'sent' && emails === 1) result.delivered += 1;
    else if (state === 'failed' && emails === 0) result.failed += 1;
    else result.broken.push({ id, state, emails });
  }
  return result;
}

/**
 * Attempts per message that recorded `sending` but no outcome (deferred, sent or failed): the replica died or lost
 * NATS in the middle of them. Only such an attempt can have reached the relay without the outcome ledger knowing it,
 * so a duplicate email is explained by one of these (docs/delivery-guarantees.md, "Duplicates that remain").
 * With `killedAt` (when mailers were SIGKILLed), only attempts whose `sending` was recorded in the `withinMs` before
 * one of those kills count: an attempt a mailer kill cut off, not one that lost its outcome some other way.
 */
export async function attemptsWithoutOutcome(
  db: pg.Pool,
  ids: readonly number[],
  killedAt?: { at: readonly Date[]; withinMs: number },
): Promise<Map<number, number>> {
  const { rows } = await db.query<{ id: number; n: number }>(
    `SELECT s.message_id AS id, count(*)::int AS n
       FROM message_events s
      WHERE s.message_id = ANY($1::bigint[]) AND s.state = 'sending'
        AND NOT EXISTS (SELECT 1 FROM message_events o
                         WHERE o.message_id = s.message_id AND o.attempt = s.attempt AND o.state IN ('deferred', 'sent', 'failed'))
        AND ($2::timestamptz[] IS NULL OR EXISTS (SELECT 1 FROM unnest($2::timestamptz[]) AS kill(at)
                                                   WHERE s.occurred_at <= kill.at AND s.occurred_at > kill.at - $3 * interval '1 millisecond'))
      GROUP BY s.message_id`,
    [ids, killedAt ? [...killedAt.at] : null, killedAt?.withinMs ?? 0],
  );
  return new Map(rows.map((row) => [Number(row.id), row.n]));
}

/**
 * Per message, its attempts that a NATS kill (one of `outages`) could have made twice, the window
 * docs/delivery-guarantees.md lists as case 3: a NATS server killed outright (SIGKILL) may lose the writes it had just
 * acknowledged (a `sending` event, a ledger write) and its consumer's latest deliveries, and offers those jobs again
 * at once after it restarts, as the same attempt. So an attempt counts when it overlaps the outage: its `sending`
 * recorded before the outage ended plus `redeliveryGraceMs` (the copy offered again at once), its outcome after the
 * outage began (the first copy was still in flight when NATS died).
 */
export async function attemptsAcrossOutages(
  db: pg.Pool,
  ids: readonly number[],
  outages: readonly { from: Date; to: Date }[],
  redeliveryGraceMs = 5_000,
): Promise<Map<number, number>> {
  const { rows } = await db.query<{ id: number; n: number }>(
    `SELECT s.message_id AS id, count(DISTINCT s.attempt)::int AS n
       FROM message_events s
       JOIN message_events o ON o.message_id = s.message_id AND o.attempt = s.attempt AND o.state IN ('deferred', 'sent', 'failed')
       JOIN unnest($2::timestamptz[], $3::timestamptz[]) AS outage(began, ended)
         ON s.occurred_at < outage.ended + $4 * interval '1 millisecond' AND o.occurred_at >= outage.began
      WHERE s.message_id = ANY($1::bigint[]) AND s.state = 'sending'
      GROUP BY s.message_id`,
    [ids, outages.map((outage) => outage.from), outages.map((outage) => outage.to), redeliveryGraceMs],
  );
  return new Map(rows.map((row) => [Number(row.id), row.n]));
}

/**
 * Where messages still in flight are, for a failure message: how many have a job waiting in the outbox, how many an
 * email at the sink already (delivered, their events not applied), and what the jobs' and the events' consumers hold
 * (the server's own counts: waiting in the stream, delivered and not acknowledged, pull requests open).
 */
export async function whereInFlight(db: pg.Pool, mailDir: string, natsUrl: string, prefix: string, ids: readonly number[]): Promise<string> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE message_id = ANY($1::bigint[])', [ids]);
  const mails = mailCounts(mailDir);
  const emailed = ids.filter((id) => (mails.get(id) ?? 0) > 0).length;
  const names = topology(prefix);
  const connection = await connect({ servers: natsUrl.split(','), timeout: 2_000 });
  try {
    const jsm = await jetstreamManager(connection);
    const consumers = await Promise.all(
      [
        [names.jobsStream, names.mailerConsumer],
        [names.eventsStream, names.eventsConsumer],
      ].map(async ([stream = '', consumer = '']) => {
        const info = await jsm.consumers.info(stream, consumer).catch((error: unknown) => String(error));
        if (typeof info === 'string') return `${consumer}: ${info}`;
        return `${consumer}: ${info.num_pending} waiting, ${info.num_ack_pending} unacknowledged, ${info.num_redelivered} redelivered, ${info.num_waiting} pulls open, delivered up to ${info.delivered.stream_seq}, acknowledged up to ${info.ack_floor.stream_seq}`;
      }),
    );
    return `${ids.length} in flight: ${rows[0]?.n ?? 0} with a job in the outbox, ${emailed} with an email at the sink; ${consumers.join('; ')}`;
  } finally {
    await connection.close();
  }
}
