// Configuration from the environment: declared once per service, validated at start with every fault listed at once.
import { readFileSync } from 'node:fs';

/**
 * One environment variable: how to read it, its default, and what it is for. docs/settings.md's table is generated
 * from these declarations (`npm run docs:settings`; test/structure/settings-table.test.ts fails when it is stale).
 */
export interface Field<T> {
  readonly env: string;
  readonly description: string;
  /** Raw default as it would appear in the environment; absent means required. */
  readonly default?: string;
  /** Secret values may also come from a mounted file named by `<ENV>_FILE`, and are never printed. */
  readonly secret: boolean;
  readonly parse: (raw: string) => T;
}

type Spec = Record<string, Field<unknown>>;
export type ConfigOf<S extends Spec> = { readonly [K in keyof S]: S[K] extends Field<infer T> ? T : never };

/** Thrown by `loadConfig` when one or more variables are missing or malformed; `faults` names each one. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly faults: readonly string[];
  constructor(faults: readonly string[]) {
    super(`invalid configuration:\n  - ${faults.join('\n  - ')}`);
    this.faults = faults;
  }
}

interface FieldOptions<T> {
  description: string;
  default?: T | string;
  secret?: boolean;
}

function field<T>(env: string, options: FieldOptions<T>, parse: (raw: string) => T): Field<T> {
  return {
    env,
    description: options.description,
    ...(options.default === undefined ? {} : { default: String(options.default) }),
    secret: options.secret ?? false,
    parse,
  };
}

export function text(env: string, options: FieldOptions<string> & { pattern?: RegExp }): Field<string> {
  return field(env, options, (raw) => {
    if (options.pattern && !options.pattern.test(raw)) throw new Error(`must match ${options.pattern}`);
    return raw;
  });
}

export function secret(env: string, options: Omit<FieldOptions<string>, 'secret'> & { minLength?: number }): Field<string> {
  return field(env, { ...options, secret: true }, (raw) => {
    if (raw.length < (options.minLength ?? 16)) throw new Error(`must be at least ${options.minLength ?? 16} characters`);
    return raw;
  });
}

export function integer(env: string, options: FieldOptions<number> & { min?: number; max?: number }): Field<number> {
  return field(env, options, (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error('must be an integer');
    const value = Number(raw);
    if (options.min !== undefined && value < options.min) throw new Error(`must be at least ${options.min}`);
    if (options.max !== undefined && value > options.max) throw new Error(`must be at most ${options.max}`);
    return value;
  });
}

export function boolean(env: string, options: FieldOptions<boolean>): Field<boolean> {
  return field(env, options, (raw) => {
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    throw new Error('must be true or false');
  });
}

export function url(env: string, options: FieldOptions<string> & { protocols: readonly string[] }): Field<string> {
  return field(env, options, (raw) => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new Error('must be a URL');
    }
    if (!options.protocols.includes(parsed.protocol.replace(/:$/, ''))) {
      throw new Error(`must use ${options.protocols.join(' or ')}`);
    }
    return raw;
  });
}

export function oneOf<const T extends string>(env: string, values: readonly T[], options: FieldOptions<T>): Field<T> {
  return field(env, options, (raw) => {
    if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`);
    return raw as T;
  });
}

/** A field whose value is parsed by a domain function that throws an Error with a readable message. */
export function custom<T>(env: string, options: FieldOptions<T>, parse: (raw: string) => T): Field<T> {
  return field(env, options, parse);
}

type Environment = Readonly<Record<string, string | undefined>>;

function rawValue(spec: Field<unknown>, env: Environment): string | undefined {
  const direct = env[spec.env];
  if (direct !== undefined && direct !== '') return direct;
  const file = spec.secret ? env[`${spec.env}_FILE`] : undefined;
  if (file) return readFileSync(file, 'utf8').trim();
  return spec.default;
}

/** Reads every field of `spec` from `env`; throws one ConfigError naming all faults. Secret values never appear in it. */
export function loadConfig<S extends Spec>(spec: S, env: Environment): ConfigOf<S> {
  const faults: string[] = [];
  const config: Record<string, unknown> = {};
  for (const [key, fieldSpec] of Object.entries(spec)) {
    let raw: string | undefined;
    try {
      raw = rawValue(fieldSpec, env);
    } catch (error) {
      faults.push(`${fieldSpec.env}_FILE: cannot be read (${(error as Error).message})`);
      continue;
    }
    if (raw === undefined) {
      faults.push(`${fieldSpec.env}: is required (${fieldSpec.description})`);
      continue;
    }
    try {
      config[key] = fieldSpec.parse(raw);
    } catch (error) {
      const shown = fieldSpec.secret ? '' : ` (got ${JSON.stringify(raw)})`;
      faults.push(`${fieldSpec.env}: ${(error as Error).message}${shown}`);
    }
  }
  if (faults.length > 0) throw new ConfigError(faults);
  return config as ConfigOf<S>;
}

const durationUnits: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `250ms`, `30s`, `5m`, `24h`, `7d` (or bare seconds) into milliseconds. */
export function parseDuration(raw: string): number {
  const match = /^\s*(\d+)\s*(ms|s|m|h|d)?\s*$/.exec(raw);
  if (!match) throw new Error('must be a duration such as 30s, 5m, 24h or 7d');
  return Number(match[1]) * (durationUnits[match[2] ?? 's'] ?? 1_000);
}

/** A duration variable, in milliseconds. */
export function duration(env: string, options: FieldOptions<string> & { minMs?: number }): Field<number> {
  return field(env, options, (raw) => {
    const ms = parseDuration(raw);
    if (options.minMs !== undefined && ms < options.minMs) throw new Error(`must be at least ${options.minMs} ms`);
    return ms;
  });
}

// ---- Settings several services read: declared once here and spread into each service's spec ------------------------

/**
 * NATS_URL and NOTIFY_NATS_PREFIX, read by every service that talks to NATS. The URL may carry credentials
 * (`nats://user:password@host:4222`), so it is a secret: it may come from NATS_URL_FILE and is never printed.
 */
export const natsSettings = {
  natsUrl: text('NATS_URL', {
    description: 'NATS servers, comma-separated. The gateway hears key revocations and plan changes there; it serves without NATS, uncached',
    default: 'nats://127.0.0.1:4222',
    secret: true,
  }),
  natsPrefix: text('NOTIFY_NATS_PREFIX', {
    description: 'prefix of stream, subject and consumer names; empty in production, it isolates test runs',
    default: '',
    pattern: /^[A-Za-z0-9_-]*$/,
  }),
  // Each service its own NATS identity, so the server's permissions can say who publishes what (docs/operations.md).
  natsUser: text('NATS_USER', { description: 'NATS user name of this service, with NATS_PASSWORD; empty: no user (or one in NATS_URL)', default: '' }),
  natsPassword: text('NATS_PASSWORD', { description: 'password of NATS_USER', default: '', secret: true }),
  natsNkeySeed: text('NATS_NKEY_SEED', {
    description: "NKey seed (SU...) this service signs the NATS server's challenge with, instead of a user and password",
    default: '',
    secret: true,
  }),
};

// One bearer token per calling component, so each is accepted only where that caller needs it (least privilege):
// a leaked mailer token cannot send, a leaked gateway token cannot administer.

/** GATEWAY_TOKEN: the gateway presents it to auth-svc and dispatch-svc, which check it. */
export const gatewayTokenSetting = {
  gatewayToken: secret('GATEWAY_TOKEN', {
    description:
      'bearer token the gateway presents to auth-svc (authorization, panel sign-in) and dispatch-svc (send, reads, panel, unsubscribe) (at least 16 characters)',
  }),
};

/** MAILER_TOKEN: mailer-svc presents it to dispatch-svc's SigningKeyService and RelayRouteService. */
export const mailerTokenSetting = {
  mailerToken: secret('MAILER_TOKEN', {
    description:
      "bearer token mailer-svc presents to dispatch-svc's SigningKeyService for DKIM keys and RelayRouteService for projects' relays (at least 16 characters)",
  }),
};

/** BOUNCE_TOKEN: bounce-svc presents it to dispatch-svc's ReportService. */
export const bounceTokenSetting = {
  bounceToken: secret('BOUNCE_TOKEN', {
    description: "bearer token bounce-svc presents to dispatch-svc's ReportService (bounces, complaints, unsubscribes) (at least 16 characters)",
  }),
};

/** ADMIN_TOKEN: notifyctl presents it to the admin services of auth-svc and dispatch-svc, which check it. */
export const adminTokenSetting = {
  adminToken: secret('ADMIN_TOKEN', {
    description: 'bearer token notifyctl presents to the admin gRPC services of auth-svc and dispatch-svc and to ListMessages (at least 16 characters)',
  }),
};

/** NATS_STREAM_REPLICAS, read by the services that create JetStream streams and buckets (dispatch-svc, mailer-svc). */
export const jetStreamSettings = {
  natsStreamReplicas: integer('NATS_STREAM_REPLICAS', { description: 'replicas of each JetStream stream (3 on a NATS cluster)', default: 1, min: 1, max: 5 }),
};

/**
 * DATABASE_URL and DATABASE_POOL_SIZE, read by the services that own tables (auth-svc, dispatch-svc). The URL carries
 * the password, so it may come from DATABASE_URL_FILE and is never printed. `maxPoolSize` bounds DATABASE_POOL_SIZE.
 */
export function databaseSettings(options: { maxPoolSize: number }) {
  return {
    databaseUrl: url('DATABASE_URL', {
      description:
        "PostgreSQL holding the service's tables (auth-svc: plans, organizations, projects, API keys; dispatch-svc: templates, messages, idempotency records, the outbox)",
      default: 'postgres://postgres@127.0.0.1:5432/notify',
      protocols: ['postgres', 'postgresql'],
      secret: true,
    }),
    databasePoolSize: integer('DATABASE_POOL_SIZE', { description: 'database connections per replica', default: 10, min: 1, max: options.maxPoolSize }),
  };
}

/**
 * NODE_ENV and NOTIFY_TEST_FAULT, the fault injection of the reliability tests. `faults` are the service's faults,
 * `none` first (the default); `meaning` says what each does. The service refuses any fault unless NODE_ENV=test.
 */
export function testFaultSettings<const F extends string>(faults: readonly F[], meaning: string) {
  return {
    nodeEnv: text('NODE_ENV', { description: 'deployment kind; only `test` allows NOTIFY_TEST_FAULT', default: 'production' }),
    testFault: oneOf('NOTIFY_TEST_FAULT', faults, { description: `TEST ONLY, refused unless NODE_ENV=test: ${meaning}`, default: 'none' }),
  };
}
