// One webhook request, made safely: https only (unless the operator allows private targets), every resolved address
// checked at connect time (address-policy.ts), no redirect followed, a hard deadline over the whole exchange, and at
// most `maxBodyBytes` of the response kept (the rest is not read).
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

/** A response (any status: the caller decides what succeeded), or why there was none. */
export type OutboundResult =
  | { readonly kind: 'response'; readonly status: number; readonly body: string; readonly retryAfter: string | undefined }
  | { readonly kind: 'error'; readonly error: string };

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

export async function postWebhook(target: string, headers: Record<string, string>, body: string, options: OutboundOptions): Promise<OutboundResult> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { kind: 'error', error: 'invalid URL' };
  }
  const refusal = urlRefusal(url, options.allowPrivate);
  if (refusal) return { kind: 'error', error: `refused: ${refusal}` };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: OutboundResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      request.destroy();
      resolve(result);
    };
    const request = client.request(url, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'Notify-Webhooks/1' },
      ...(options.allowPrivate ? {} : { lookup: checkedLookup(options.resolve ?? systemResolve) }),
    });
    const deadline = setTimeout(() => finish({ kind: 'error', error: `no response within ${options.timeoutMs} ms` }), options.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({ kind: 'error', error: error instanceof RefusedTarget || error.code === 'EREFUSEDTARGET' ? `refused: ${error.message}` : error.message || String(error.code) }),
    );
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = (): void => {
        const retryAfter = response.headers['retry-after'];
        finish({ kind: 'response', status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined });
      };
      response.on('data', (chunk: Buffer) => {
        if (kept < options.maxBodyBytes) chunks.push(chunk.subarray(0, options.maxBodyBytes - kept));
        kept += chunk.length;
        // Enough read: the rest is not waited for.
        if (kept >= options.maxBodyBytes) done();
      });
      response.on('end', done);
      response.on('error', done);
    });
    request.end(body);
  });
}
