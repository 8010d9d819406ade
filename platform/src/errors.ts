// The three kinds of failure every service distinguishes. Only the gateway maps them to HTTP; gRPC services to gRPC status.
import type { status } from '@grpc/grpc-js';

/** Thrown when the caller can fix the request (bad input, unknown resource, refused permission); mapped to a 4xx / non-retryable status. */
export class UserError extends Error {
  override name = 'UserError';
  /** gRPC status code carried to the caller. */
  readonly status: status;
  /** Stable snake_case reason, identical in every language, sent as the `notify-error-code` trailer. */
  readonly reason: string;
  /** Per-field messages for validation failures (sent as `notify-field-errors`). */
  readonly fields: readonly string[];
  constructor(grpcStatus: status, reason: string, message: string, options: { fields?: readonly string[]; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = grpcStatus;
    this.reason = reason;
    this.fields = options.fields ?? [];
  }
}

/** Thrown when a dependency (database, broker, another service) failed; the caller may retry later (503 / UNAVAILABLE). */
export class OperationalError extends Error {
  override name = 'OperationalError';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
  }
}

export const errorMetadataKeys = {
  reason: 'notify-error-code',
  fields: 'notify-field-errors',
} as const;
