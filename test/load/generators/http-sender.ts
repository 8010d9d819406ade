// The request machinery shared by the bench's own generators: keep-alive sockets (at most `connections`), each
// request timed from the moment it is started (waiting for a free socket counts, as it would for a client) and
// bounded by an overall deadline, so an overloaded system ends a run with errors instead of stretching it forever.
import { Agent, request } from 'node:http';
import { type LoadResult, summarize } from './load-result.ts';

export interface PreparedRequest {
  /** POST unless said otherwise. */
  readonly method?: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface HttpSender {
  /** Starts one request; resolves when it is answered or has failed (never rejects). */
  send(spec: PreparedRequest): Promise<void>;
  /** Requests started and not yet settled. */
  inFlight(): number;
  /** The figures so far, and closes the sockets. */
  finish(): LoadResult & { readonly replayed: number };
}

/**
 * How long a keep-alive socket may stay idle before the sender closes it. Node's agent otherwise keeps one until a
 * second before the timeout the server announces (`Keep-Alive: timeout=5`, Node's default), counted from when the
 * client has read the answer, later than the server started its own count; on two loaded cores a paced run's idle
 * sockets then sometimes reached the server's timeout first, and the request that took one was reset unanswered (two
 * full runs failed so, one and two sends of a 200/s run; nodejs/node#47130). Closing them sooner leaves a margin of
 * seconds, not one.
 */
export const idleSocketMs = 2_000;

export function createHttpSender(options: { url: string; connections: number; expected: number; timeoutMs: number }): HttpSender {
  const target = new URL(options.url);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections, timeout: idleSocketMs });
  let latencies = new Float64Array(Math.max(16, options.expected));
  const statuses: Record<string, number> = {};
  let answered = 0;
  let errors = 0;
  let timeouts = 0;
  let replayed = 0;
  let started = 0;
  let pending = 0;
  let first = 0;
  let last = 0;

  const send = (spec: PreparedRequest): Promise<void> =>
    new Promise((resolve) => {
      const sentAt = performance.now();
      if (started === 0) first = sentAt;
      started += 1;
      pending += 1;
      let done = false;
      let timedOut = false;
      const settle = (status?: string): void => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        pending -= 1;
        last = performance.now();
        if (status === undefined && timedOut) timeouts += 1;
        else if (status === undefined) errors += 1;
        else {
          if (answered === latencies.length) {
            const grown = new Float64Array(latencies.length * 2);
            grown.set(latencies);
            latencies = grown;
          }
          latencies[answered] = last - sentAt;
          answered += 1;
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
        resolve();
      };
      const outgoing = request({
        agent,
        host: target.hostname,
        port: target.port,
        method: spec.method ?? 'POST',
        path: spec.path,
        headers: { ...spec.headers, 'content-length': String(spec.body.length) },
      });
      // From the start, not from when a socket was free: a request stuck in the queue is as unanswered as any.
      const deadline = setTimeout(() => {
        timedOut = true;
        outgoing.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      outgoing.on('error', () => settle());
      outgoing.on('response', (response) => {
        if (response.headers['idempotent-replayed'] === 'true') replayed += 1;
        const status = String(response.statusCode ?? 0);
        response.on('end', () => settle(status));
        response.on('error', () => settle());
        response.resume();
      });
      outgoing.end(spec.body);
    });

  return {
    send,
    inFlight: () => pending,
    finish() {
      agent.destroy();
      return {
        sent: started,
        completed: answered,
        statuses,
        errors,
        timeouts,
        durationS: (last - first) / 1_000,
        latencyMs: summarize(latencies.subarray(0, answered)),
        replayed,
      };
    },
  };
}
