// One webhook request, made safely: https only (unless the operator allows private targets), every resolved address
// checked at connect time (address-policy.ts), no redirect followed, a hard deadline over the whole exchange, at most
// `maxBodyBytes` of the response kept (the rest is not read), and connections kept alive between requests.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { refusalOf } from './address-policy.ts';

export interface OutboundOptions {
  /** NOTIFY_WEBHOOK_ALLOW_PRIVATE: plain http and private addresses allowed (local development). */
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  /** Resolves a host name to its addresses; the system resolver unless a test gives its own. */
  readonly resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

/** A response (any status: the caller decides what succeeded), or why there was none (`timedOut`: no answer in time). */
export type OutboundResult =
  | { readonly kind: 'response'; readonly status: number; readonly body: string; readonly retryAfter: string | undefined }
  | { readonly kind: 'error'; readonly error: string; readonly timedOut?: true };

/** A request refused before any connection: the URL or the address it resolves to is not allowed. */
export class RefusedTarget extends Error {
  override name = 'RefusedTarget';
}

const systemResolve = (hostname: string): Promise<LookupAddress[]> =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

/** A socket lookup that refuses the connection when any address the name resolves to is not allowed. */
function checkedLookup(resolve: (hostname: string) => Promise<LookupAddress[]>): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const addresses = found.filter((entry) => !options.family || entry.family === options.family);
        const refusal = addresses.map((entry) => refusalOf(entry.address)).find((reason) => reason !== undefined);
        const first = addresses[0];
        if (refusal || !first) {
          const error = new RefusedTarget(refusal ?? `${hostname} has no address`) as NodeJS.ErrnoException;
          error.code = 'EREFUSEDTARGET';
          callback(error, '', 0);
        } else if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/** Why `url` may not be requested at all, checked before connecting (scheme, and an address written in the URL). */
export function urlRefusal(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return `${url.protocol} URLs are not allowed (https is required)`;
  if (url.username || url.password) return 'credentials in the URL are not allowed';
  // A literal address is connected to without a lookup, so it is checked here.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) !== 0) return refusalOf(host);
  return undefined;
}

/** A connection left idle this long is closed (shorter than the idle timeouts receivers commonly keep, 5 s or more). */
const idleConnectionMs = 4_000;

/** Webhook requests over kept-alive connections: one pool per scheme, each connection checked once, when it is made. */
export interface Outbound {
  post(target: string, headers: Record<string, string>, body: string): Promise<OutboundResult>;
  /** Closes the idle connections (at shutdown, once the open requests are done). */
  close(): void;
}

export function createOutbound(options: OutboundOptions): Outbound {
  // Connections are reused (a TLS handshake per event would cost more than the event). The address policy holds: it
  // is checked in the lookup each new connection makes, and a kept connection stays on the address it was checked on.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, timeout: idleConnectionMs }),
    'https:': new https.Agent({ keepAlive: true, timeout: idleConnectionMs }),
  };
  const lookup = options.allowPrivate ? undefined : checkedLookup(options.resolve ?? systemResolve);
  return {
    async post(target, headers, body) {
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        return { kind: 'error', error: 'invalid URL' };
      }
      const refusal = urlRefusal(url, options.allowPrivate);
      if (refusal) return { kind: 'error', error: `refused: ${refusal}` };
      const via = { agent: agents[url.protocol as keyof typeof agents], lookup, deadline: performance.now() + options.timeoutMs };
      const first = await exchange(url, headers, body, options, via);
      // A kept connection the receiver closed as it was being reused fails before any answer: the request is made
      // again, once, on another (Node's documented remedy; a receiver may see it twice, under one webhook-id).
      return first.kind === 'stale' ? settled(await exchange(url, headers, body, options, via)) : first;
    },
    close() {
      for (const agent of Object.values(agents)) agent.destroy();
    },
  };
}

/** The outcome of one exchange: a result, or a reused connection that turned out closed before any answer. */
type Exchange = OutboundResult | { readonly kind: 'stale'; readonly error: string };

const settled = (result: Exchange): OutboundResult => (result.kind === 'stale' ? { kind: 'error', error: result.error } : result);

function exchange(
  url: URL,
  headers: Record<string, string>,
  body: string,
  options: OutboundOptions,
  via: {
    readonly agent: http.Agent;
    readonly lookup: LookupFunction | undefined /** performance.now() at which the whole request gives up. */;
    readonly deadline: number;
  },
): Promise<Exchange> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let done = false;
    // The connection goes back to the pool only after a response read to its end; otherwise it is closed.
    const finish = (result: Exchange, keepConnection = false): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!keepConnection) request.destroy();
      resolve(result);
    };
    const request = client.request(url, {
      method: 'POST',
      agent: via.agent,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'Notify-Webhooks/1' },
      ...(via.lookup ? { lookup: via.lookup } : {}),
    });
    const timer = setTimeout(
      () => finish({ kind: 'error', error: `no response within ${options.timeoutMs} ms`, timedOut: true }),
      Math.max(0, via.deadline - performance.now()),
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) return finish({ kind: 'stale', error: error.message });
      finish({
        kind: 'error',
        error: error instanceof RefusedTarget || error.code === 'EREFUSEDTARGET' ? `refused: ${error.message}` : error.message || String(error.code),
      });
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const answer = (): OutboundResult => {
        const retryAfter = response.headers['retry-after'];
        // Kept in a text column, which cannot hold U+0000: a receiver's NUL bytes are kept as U+FFFD.
        const body = Buffer.concat(chunks).toString('utf8').replaceAll('\0', '\uFFFD');
        return { kind: 'response', status: response.statusCode ?? 0, body, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
      };
      response.on('data', (chunk: Buffer) => {
        if (kept < options.maxBodyBytes) chunks.push(chunk.subarray(0, options.maxBodyBytes - kept));
        kept += chunk.length;
        // Enough read: the rest is not waited for (and the connection is not reused).
        if (kept >= options.maxBodyBytes) finish(answer());
      });
      response.on('end', () => finish(answer(), true));
      response.on('error', () => finish(answer()));
    });
    request.end(body);
  });
}
