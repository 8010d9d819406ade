// The DKIM keys the mailer signs with, one per domain mail is From: MAIL_FROM's, fetched at start and held for good, and
// each domain a job names as its `from`, fetched when the first such job comes and dropped once no job has named it for
// an hour. Each is fetched sealed from dispatch-svc (SigningKeyService), opened with NOTIFY_DATA_KEY, held in memory and
// fetched again every DKIM_KEY_REFRESH, so a key added, rotated or removed with `notifyctl domain` takes effect without a
// restart. While dispatch-svc cannot answer, the last key is kept (signing must not stop because of a blip); an answer
// that the domain has no key makes its mail go unsigned. A job's domain dispatch-svc has not answered for yet has no
// last key: its mail waits (SigningKeyUnavailable) rather than go out unsigned From a domain whose DMARC policy expects
// a signature. The private key is never logged: only the domain and selector.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { type Logger, RemoteError } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import type { SigningKey } from './dkim-sign.ts';

/** One domain's signing key, its private key parsed once when fetched (dkim-sign.ts signs with it). */
export type DkimKey = SigningKey;

/**
 * How long a domain no job names stays held (and fetched every DKIM_KEY_REFRESH). An hour: a sender's batches and
 * retries keep its domain held, while a domain that stopped sending costs no more fetches than this.
 */
export const idleDomainMs = 60 * 60 * 1000;

/** A job's From domain whose key dispatch-svc has not answered for yet: its mail is deferred, not sent unsigned. */
export class SigningKeyUnavailable extends Error {
  override name = 'SigningKeyUnavailable';
  constructor(domain: string) {
    super(`the DKIM key of ${domain} could not be fetched from dispatch-svc yet`);
  }
}

export interface DkimKeyDeps {
  /** MAIL_FROM's domain, lower case: held for good. */
  readonly domain: string;
  readonly dataKey: DataKey;
  /** SigningKeyService.GetSigningKey; rejects with RemoteError. */
  readonly fetch: (request: dispatch.GetSigningKeyRequest) => Promise<dispatch.SigningKey__Output>;
  readonly logger: Logger;
  /** The clock a domain's idleness is measured on (milliseconds); Date.now unless a test turns it. */
  readonly now?: () => number;
}

/** One domain's key as held. */
interface Held {
  /** Undefined: unsigned (no key, or none fetched yet). */
  key: DkimKey | undefined;
  /** Whether dispatch-svc has answered for the domain (with a key or with none) since it was first held. */
  answered: boolean;
  /** When a job last named the domain. */
  namedAt: number;
  /** The domain's first fetch while it is under way: every job naming the domain meanwhile waits for it. */
  first?: Promise<void>;
}

export class DkimKeys {
  readonly #deps: DkimKeyDeps;
  readonly #now: () => number;
  readonly #held = new Map<string, Held>();

  constructor(deps: DkimKeyDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#held.set(deps.domain, { key: undefined, answered: false, namedAt: this.#now() });
  }

  /**
   * The key to sign mail From `domain` (lower case) with, or undefined to send it unsigned. A promise only for a domain
   * not answered for yet: its jobs share one fetch, and one still unanswered after it is refused with
   * SigningKeyUnavailable. MAIL_FROM's is fetched at start and by every refresh: until it is known its mail goes
   * unsigned, without waiting. A held domain's key comes back at once, so the mail sender awaits nothing per message.
   */
  keyFor(domain: string): DkimKey | undefined | Promise<DkimKey | undefined> {
    const held = this.#held.get(domain) ?? { key: undefined, answered: false, namedAt: 0 };
    held.namedAt = this.#now();
    if (held.answered || domain === this.#deps.domain) return held.key;
    this.#held.set(domain, held);
    held.first ??= this.#fetch(domain, held).finally(() => {
      held.first = undefined;
    });
    return held.first.then(() => {
      if (!held.answered) throw new SigningKeyUnavailable(domain);
      return held.key;
    });
  }

  /**
   * Drops the domains no job has named for idleDomainMs (never MAIL_FROM's), then fetches every held key again; never
   * throws (a failure keeps that domain's last key and is logged).
   */
  async refresh(): Promise<void> {
    const idleSince = this.#now() - idleDomainMs;
    for (const [domain, held] of this.#held) {
      if (domain === this.#deps.domain || held.first || held.namedAt >= idleSince) continue;
      this.#held.delete(domain);
      this.#deps.logger.info({ domain, dkim: describe(held.key) }, 'no job has named the domain for an hour: its DKIM key is no longer held');
    }
    // A domain still on its first fetch is left to it.
    await Promise.all([...this.#held].filter(([, held]) => !held.first).map(([domain, held]) => this.#fetch(domain, held)));
  }

  async #fetch(domain: string, held: Held): Promise<void> {
    const { logger } = this.#deps;
    let answer: dispatch.SigningKey__Output;
    try {
      answer = await this.#deps.fetch({ domain });
    } catch (error) {
      // NOT_FOUND domain_not_found: the domain has no key (any more).
      if (error instanceof RemoteError && error.reason === 'domain_not_found') return this.#replace(domain, held, undefined);
      logger.warn({ err: error, domain, kept: describe(held.key) }, 'fetching the DKIM key failed; keeping the last one');
      return;
    }
    let privateKey: KeyObject;
    try {
      // Parsed here, once per fetch: signing a message then costs one RSA operation and no PEM parsing.
      privateKey = createPrivateKey(this.#deps.dataKey.open(answer.sealedPrivateKey, `dkim:${domain}`));
    } catch {
      // No cause attached: the error says nothing useful and the sealed value is not for the logs either.
      logger.error(
        { domain, kept: describe(held.key) },
        'the DKIM key cannot be opened with NOTIFY_DATA_KEY (is it the same secret dispatch-svc has?) or read as a private key; keeping the last one',
      );
      return;
    }
    this.#replace(domain, held, { domainName: domain, keySelector: answer.selector, privateKey });
  }

  #replace(domain: string, held: Held, next: DkimKey | undefined): void {
    const sameKey = next === undefined ? held.key === undefined : held.key !== undefined && next.privateKey.equals(held.key.privateKey);
    const changed = !held.answered || describe(next) !== describe(held.key) || !sameKey;
    held.key = next;
    held.answered = true;
    if (changed)
      this.#deps.logger.info({ domain, dkim: describe(next) }, next ? 'signing mail with DKIM' : 'sending mail unsigned: the domain has no DKIM key');
  }
}

/** A key as the logs name it: its DNS record, never its private part. */
function describe(value: DkimKey | undefined): string {
  return value ? `${value.keySelector}._domainkey.${value.domainName}` : 'none';
}
