// What a SendRequest must hold for the database, and the gateway's verdict on its fields (the contract's check 11).
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { dispatch, JobSender } from '@notify/proto';
import { slugPattern } from '../templates/template-store.ts';
import type { BatchVerdicts } from './batch-verdicts.ts';
import { labelFaults, labelsOf } from './labels.ts';

export interface SendInput {
  /** `{}` when the gateway found the fields invalid: nothing of the body is read then. */
  readonly data: Record<string, unknown>;
  /** Lower-cased UUID, or null when the caller sent none. */
  readonly idempotencyKey: string | null;
  readonly tags: readonly string[];
  readonly metadata: Record<string, string>;
  /** The caller's `send_at`: the message is accepted `scheduled` until then. Null to send at once. */
  readonly sendAt: Date | null;
  /** The caller's `from`; null to send From the deployment's MAIL_FROM. */
  readonly from: JobSender | null;
}

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const controlCharacters = /[\u0000-\u001f\u007f]/;
const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;
const isAddress = (value: string): boolean => value.length <= 254 && !controlCharacters.test(value) && /^[^\s@<>,;]+@[^\s@<>,;]+$/.test(value);

/** The body's own fields, which are not looked at when the gateway already refused them (`fields_invalid`). */
function bodyFaults(request: dispatch.SendRequest__Output): { faults: string[]; data: unknown } {
  const faults: string[] = [];
  if (!slugPattern.test(request.template)) faults.push('template: must be 1-100 characters of A-Z, a-z, 0-9, _ and -');
  if (request.to === '' || request.to.length > 254 || controlCharacters.test(request.to)) faults.push('to: must be one email address');
  let data: unknown;
  try {
    data = JSON.parse(request.dataJson);
  } catch {
    data = undefined;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) faults.push('data: must be a JSON object');
  faults.push(...labelFaults(request));
  if (request.sendAt !== '' && Number.isNaN(Date.parse(request.sendAt))) faults.push('send_at: must be an RFC 3339 time');
  if (request.fromAddress !== '' && !isAddress(request.fromAddress)) faults.push('from_address: must be one email address');
  if (request.fromName.length > 200 || controlCharacters.test(request.fromName) || (request.fromName !== '' && request.fromAddress === ''))
    faults.push('from_name: at most 200 characters without control characters, with a from_address');
  return { faults, data };
}

/**
 * The gateway validates the public request; this re-checks what the database relies on, so a caller that skipped
 * that validation gets INVALID_ARGUMENT and not an internal error.
 */
export function validate(request: dispatch.SendRequest__Output): SendInput {
  const faults: string[] = [];
  if (!isPositiveId(request.projectId)) faults.push('project_id: must be a positive integer');
  if (!isPositiveId(request.organizationId)) faults.push('organization_id: must be a positive integer');
  if (!isPositiveId(request.apiKeyId)) faults.push('api_key_id: must be a positive integer');
  const body = request.fieldsInvalid ? { faults: [], data: {} } : bodyFaults(request);
  faults.push(...body.faults);
  const key = request.idempotencyKey;
  if (key !== '' && !uuidPattern.test(key)) faults.push('idempotency_key: must be a UUID');
  if (key !== '' && request.fingerprint === '') faults.push('fingerprint: is required with an idempotency key');
  if (!Number.isSafeInteger(request.monthlyQuota) || request.monthlyQuota < 0) faults.push('monthly_quota: must be a non-negative integer');
  if (request.keyFromDomains.some((domain) => domain === '' || domain !== domain.toLowerCase())) faults.push('key_from_domains: must be lower-case domains');
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid send request: ${faults.join('; ')}`, { fields: faults });
  const sendAt = request.fieldsInvalid || request.sendAt === '' ? null : new Date(request.sendAt);
  const from = request.fieldsInvalid || request.fromAddress === '' ? null : { address: request.fromAddress, name: request.fromName };
  return { data: body.data as Record<string, unknown>, idempotencyKey: key === '' ? null : key.toLowerCase(), ...labelsOf(request), sendAt, from };
}

/** The gateway's field validation refused the body, and no idempotency record answered first; the gateway renders the 422. */
export function fieldsInvalid(): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'fields_invalid', "the request's fields are invalid (check 11)");
}

/** Step 2 (check 11): the gateway refused these sends' fields; with their keys judged, nothing is left to decide. */
export function refuseInvalidFields(batch: BatchVerdicts): void {
  for (const index of batch.open()) {
    if (batch.send(index).request.fieldsInvalid) batch.refuse(index, fieldsInvalid());
  }
}
