// Structured JSON logs with the active trace's ids; secrets are redacted wherever they appear in a logged object.
import { trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

const secretKeys = ['apiKey', 'api_key', 'authorization', 'token', 'gatewayToken', 'mailerToken', 'bounceToken', 'adminToken', 'password', 'secret', 'smtpUrl', 'smtpUrls', 'databaseUrl', 'redisUrl'];

/** Paths pino censors: the keys themselves, one and two levels deep, and HTTP/gRPC header bags. */
export const redactedPaths = [
  ...secretKeys,
  ...secretKeys.map((key) => `*.${key}`),
  ...secretKeys.map((key) => `*.*.${key}`),
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'metadata.authorization',
];

export function createLogger(service: string, level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: redactedPaths, censor: '[redacted]' },
      mixin() {
        const context = trace.getActiveSpan()?.spanContext();
        return context ? { trace_id: context.traceId, span_id: context.spanId } : {};
      },
    },
    destination,
  );
}
