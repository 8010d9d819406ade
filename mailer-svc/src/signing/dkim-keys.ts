// The DKIM key of MAIL_FROM's domain, as the mailer signs with it: fetched sealed from dispatch-svc (SigningKeyService),
// opened with NOTIFY_DATA_KEY, held in memory and fetched again every DKIM_KEY_REFRESH, so a key added or removed
// with `notifyctl domain` takes effect without a restart. While dispatch-svc cannot answer, the last key is kept
// (signing must not stop because of a blip); an answer that the domain has no key makes mail go unsigned.
// The private key is never logged: only the domain and selector are.
import { RemoteError, type Logger } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';

/** What nodemailer's `dkim` option takes for one signature. */
export interface DkimKey {
  readonly domainName: string;
  readonly keySelector: string;
  readonly privateKey: string;
}

export interface DkimKeys {
  /** The key to sign with now, or undefined to send unsigned. */
  current(): DkimKey | undefined;
  /** Fetches the key again; never throws (a failure keeps the last key and is logged). */
  refresh(): Promise<void>;
}

export interface DkimKeyDeps {
  /** MAIL_FROM's domain, lower case. */
  readonly domain: string;
  readonly dataKey: DataKey;
  /** SigningKeyService.GetSigningKey; rejects with RemoteError. */
  readonly fetch: (request: dispatch.GetSigningKeyRequest) => Promise<dispatch.SigningKey__Output>;
  readonly logger: Logger;
}

export function createDkimKeys(deps: DkimKeyDeps): DkimKeys {
  let key: DkimKey | undefined;
  const describe = (value: DkimKey | undefined): string => (value ? `${value.keySelector}._domainkey.${value.domainName}` : 'none');

  const replace = (next: DkimKey | undefined): void => {
    const changed = describe(next) !== describe(key) || next?.privateKey !== key?.privateKey;
    key = next;
    if (changed) deps.logger.info({ domain: deps.domain, dkim: describe(next) }, next ? 'signing mail with DKIM' : 'sending mail unsigned: the domain has no DKIM key');
  };

  return {
    current: () => key,
    async refresh() {
      let answer: dispatch.SigningKey__Output;
      try {
        answer = await deps.fetch({ domain: deps.domain });
      } catch (error) {
        // NOT_FOUND domain_not_found: the domain has no key (any more).
        if (error instanceof RemoteError && error.reason === 'domain_not_found') return replace(undefined);
        deps.logger.warn({ err: error, domain: deps.domain, kept: describe(key) }, 'fetching the DKIM key failed; keeping the last one');
        return;
      }
      let privateKey: string;
      try {
        privateKey = deps.dataKey.open(answer.sealedPrivateKey, `dkim:${deps.domain}`);
      } catch {
        // No cause attached: the error says nothing useful and the sealed value is not for the logs either.
        deps.logger.error({ domain: deps.domain, kept: describe(key) }, 'the DKIM key cannot be opened with NOTIFY_DATA_KEY (is it the same secret dispatch-svc has?); keeping the last one');
        return;
      }
      replace({ domainName: deps.domain, keySelector: answer.selector, privateKey });
    },
  };
}
