// Check 3's input: X-Organization-ID is a positive integer in decimal, without sign, spaces or leading zeros.
import type { MessageKey } from '../i18n/messages.ts';

export type ParsedOrganization = { ok: true; id: number } | { ok: false; reason: Extract<MessageKey, `organization.${string}`> };

export function parseOrganizationId(header: string | undefined): ParsedOrganization {
  if (header === undefined || header === '') return { ok: false, reason: 'organization.missing' };
  if (!/^[1-9][0-9]{0,17}$/.test(header)) return { ok: false, reason: 'organization.invalid' };
  const id = Number(header);
  // int64 ids travel as JS numbers (proto loader `longs: Number`): beyond 2^53 the id would silently change.
  if (!Number.isSafeInteger(id)) return { ok: false, reason: 'organization.invalid' };
  return { ok: true, id };
}
