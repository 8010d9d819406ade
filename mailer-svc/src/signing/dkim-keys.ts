// The DKIM key of MAIL_FROM's domain, as the mailer signs with it: fetched sealed from dispatch-svc (SigningKeyService),
// opened with NOTIFY_DATA_KEY, held in memory and fetched again every DKIM_KEY_REFRESH, so a key added or removed
// with `notifyctl domain` takes effect without a restart. While dispatch-svc cannot answer, the last key is kept
// (signing must not stop because of a blip); an answer that the domain has no key makes mail go unsigned.
// The private key is never logged: only the domain and selector are.
import { type Logger, RemoteError } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';

/** What nodemailer's `dkim` option takes for one signature. */
export interface DkimKey {
  readonly domainName: string;
  readonly keySelector: string;
  readonly privateKey: string;
}

export interface DkimKeyDeps {
  /** MAIL_FROM's domain, lower case. */
  readonly domain: string;
  readonly dataKey: DataKey;
  /** SigningKeyService.GetSigningKey; rejects with RemoteError. */
  readonly fetch: (request: dispatch.GetSigningKeyRequest) => Promise<dispatch.SigningKey__Output>;
  readonly logger: Logger;
}

export class DkimKeys {
  readonly #deps: DkimKeyDeps;
  #key: DkimKey | undefined;

  constructor(deps: DkimKeyDeps) {
    this.#deps = deps;
  }

  /** The key to sign with now, or undefined to send unsigned. */
  current(): DkimKey | undefined {
    return this.#key;
  }

  /** Fetches the key again; never throws (a failure keeps the last key and is logged). */
  async refresh(): Promise<void> {
    const { domain, logger } = this.#deps;
    let answer: dispatch.SigningKey__Output;
    try {
      answer = await this.#deps.fetch({ domain });
    } catch (error) {
      // NOT_FOUND domain_not_found: the domain has no key (any more).
      if (error instanceof RemoteError && error.reason === 'domain_not_found') return this.#replace(undefined);
      logger.warn({ err: error, domain, kept: describe(this.#key) }, 'fetching the DKIM key failed; keeping the last one');
      return;
    }
    let privateKey: string;
    try {
      privateKey = this.#deps.dataKey.open(answer.sealedPrivateKey, `dkim:${domain}`);
    } catch {
      // No cause attached: the error says nothing useful and the sealed value is not for the logs either.
      logger.error(
        { domain, kept: describe(this.#key) },
        'the DKIM key cannot be opened with NOTIFY_DATA_KEY (is it the same secret dispatch-svc has?); keeping the last one',
      );
      return;
    }
    this.#replace({ domainName: domain, keySelector: answer.selector, privateKey });
  }

  #replace(next: DkimKey | undefined): void {
    const changed = describe(next) !== describe(this.#key) || next?.privateKey !== this.#key?.privateKey;
    this.#key = next;
    if (changed)
      this.#deps.logger.info(
        { domain: this.#deps.domain, dkim: describe(next) },
        next ? 'signing mail with DKIM' : 'sending mail unsigned: the domain has no DKIM key',
      );
  }
}

/** A key as the logs name it: its DNS record, never its private part. */
function describe(value: DkimKey | undefined): string {
  return value ? `${value.keySelector}._domainkey.${value.domainName}` : 'none';
}
