// Carrying UserError across gRPC: the server puts reason and field messages in trailers; the client reads them back.
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { errorMetadataKeys, OperationalError, UserError } from '../errors.ts';

/** Error codes of `pg`/`ioredis`/Node sockets and PostgreSQL SQLSTATEs that mean "a dependency is unreachable, retry". */
const unavailableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
  '53300',
]);

function isDependencyFailure(error: unknown): boolean {
  if (error instanceof OperationalError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && unavailableCodes.has(code)) return true;
  return error instanceof Error && /Connection terminated|timeout exceeded when trying to connect/i.test(error.message);
}

export interface GrpcFailure {
  code: status;
  details: string;
  metadata: Metadata;
  /** True when the failure is a bug that must be logged with its stack. */
  unexpected: boolean;
}

export function toGrpcFailure(error: unknown): GrpcFailure {
  const metadata = new Metadata();
  if (error instanceof UserError) {
    metadata.set(errorMetadataKeys.reason, error.reason);
    if (error.fields.length > 0) metadata.set(errorMetadataKeys.fields, JSON.stringify(error.fields));
    return { code: error.status, details: error.message, metadata, unexpected: false };
  }
  if (isDependencyFailure(error)) {
    metadata.set(errorMetadataKeys.reason, 'service_unavailable');
    return { code: status.UNAVAILABLE, details: 'a dependency is unavailable', metadata, unexpected: false };
  }
  return { code: status.INTERNAL, details: 'internal error', metadata, unexpected: true };
}

/**
 * Why a call was refused, as data: its status, stable reason and field messages, what a UserError carries and a
 * RemoteError reads back. Where a refusal is an answer rather than a failed call: an item of a batched call (the shape
 * of the wire's SendRefusal), a refused item of a batch's stored answer, what the gateway maps to the caller's error.
 */
export interface Refusal {
  readonly code: status;
  readonly reason: string;
  readonly fields: string[];
}

/** A failed call as the client sees it: status, stable reason, and field messages if any. */
export class RemoteError extends Error {
  override name = 'RemoteError';
  readonly status: status;
  readonly reason: string;
  readonly fields: readonly string[];
  constructor(error: ServiceError) {
    super(error.details || error.message, { cause: error });
    this.status = error.code;
    const reason = error.metadata?.get(errorMetadataKeys.reason)[0];
    this.reason = typeof reason === 'string' ? reason : (status[error.code]?.toLowerCase() ?? 'unknown');
    const fields = error.metadata?.get(errorMetadataKeys.fields)[0];
    this.fields = typeof fields === 'string' ? (JSON.parse(fields) as string[]) : [];
  }
}
