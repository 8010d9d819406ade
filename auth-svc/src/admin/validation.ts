// Input checks for the admin surface: every fault of a request is collected and reported at once as INVALID_ARGUMENT.
import { status } from '@grpc/grpc-js';
import { parseRate, parseRetention, UserError } from '@notify/platform';
import { expandScopes, maxKeyFromDomains, type Scope } from '@notify/proto';

/** The longest domain name (RFC 1035). */
const maxDomainLength = 253;

// C0/C1 controls, line and paragraph separators, and bidirectional overrides make a name print differently from what it is.
const unprintable = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

export class Checks {
  readonly #faults: string[] = [];

  /** A display name: trimmed, 1..`max` characters, nothing unprintable. Returns the trimmed value. */
  name(field: string, value: string, max: number): string {
    const trimmed = value.trim();
    if (trimmed.length === 0) this.#faults.push(`${field}: must not be empty`);
    else if ([...trimmed].length > max) this.#faults.push(`${field}: must be at most ${max} characters`);
    else if (unprintable.test(trimmed)) this.#faults.push(`${field}: must not contain control characters`);
    return trimmed;
  }

  /** A reference to an existing row: a positive integer. */
  id(field: string, value: number): number {
    if (!Number.isSafeInteger(value) || value <= 0) this.#faults.push(`${field}: must be a positive id`);
    return value;
  }

  /** A monthly quota: 0 (unlimited) or a positive whole number of messages. */
  quota(field: string, value: number): number {
    if (!Number.isSafeInteger(value) || value < 0) this.#faults.push(`${field}: must be 0 (unlimited) or a positive number`);
    return value;
  }

  /**
   * A per-key send rate in NOTIFY_PUBLIC_SEND_RATE form, stored as written (trimmed); '' is the gateway's default, and
   * comes back as null.
   */
  sendRate(field: string, value: string): string | null {
    const trimmed = value.trim();
    if (trimmed === '') return null;
    try {
      parseRate(trimmed);
    } catch (error) {
      this.#faults.push(`${field}: ${(error as Error).message}`);
    }
    return trimmed;
  }

  /** A key's scopes, named in full or by preset (proto/src/scopes.ts): expanded, `sending` when none is named. */
  scopes(field: string, value: readonly string[]): Scope[] {
    try {
      return expandScopes(value.map((word) => word.trim()));
    } catch (error) {
      this.#faults.push(`${field}: ${(error as Error).message}`);
      return [];
    }
  }

  /**
   * The domains a key may send From, as stored and compared: lower case, without a trailing dot, each once, sorted;
   * empty for no limit. Whether each is a sending domain of the organization is judged against the database.
   */
  fromDomains(field: string, value: readonly string[]): string[] {
    if (value.length > maxKeyFromDomains) this.#faults.push(`${field}: at most ${maxKeyFromDomains} domains`);
    const domains = [...new Set(value.map((domain) => domain.trim().toLowerCase().replace(/\.$/, '')))].sort();
    for (const domain of domains)
      if (domain === '' || domain.length > maxDomainLength) this.#faults.push(`${field}: ${JSON.stringify(domain)} is not a domain name`);
    return domains;
  }

  /**
   * An organization's message retention, `<N>d` or `<N>h`, as whole hours; '' is the deployment's
   * NOTIFY_MESSAGE_RETENTION, and comes back as null.
   */
  retention(field: string, value: string): number | null {
    if (value.trim() === '') return null;
    try {
      return parseRetention(value);
    } catch (error) {
      this.#faults.push(`${field}: ${(error as Error).message}`);
      return null;
    }
  }

  fault(message: string): void {
    this.#faults.push(message);
  }

  /** Throws INVALID_ARGUMENT naming every fault, if there is any. */
  done(): void {
    if (this.#faults.length === 0) return;
    throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', this.#faults.join('; '), { fields: this.#faults });
  }
}
