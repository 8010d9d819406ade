// The gateway's environment variables, validated at start with every fault listed at once. The NATS and token settings
// are the platform's shared groups; docs/settings.md's table is generated from these declarations.
import {
  custom,
  duration,
  gatewayTokenSetting,
  grpcClientTlsSettings,
  grpcMessageLimitBytes,
  integer,
  natsSettings,
  parseRate,
  text,
  url,
} from '@notify/platform';
import { panelConfigSpec } from './panel/config.ts';
import { parseSentinels } from './rate-limit/redis.ts';
import { sendManyDefaults } from './send/send-many.ts';

/**
 * Largest value of either body limit: a quarter of the internal gRPC message limit, so that a body accepted here
 * reaches dispatch-svc even after JSON.stringify has made its data longer.
 */
export const maxPublicBodyBytes = grpcMessageLimitBytes / 4;

export const configSpec = {
  httpPort: integer('HTTP_PORT', { description: 'port of the public HTTP listener; 0 picks a free one', default: 8080, min: 0, max: 65535 }),
  authSvcAddr: text('AUTH_SVC_ADDR', { description: 'gRPC target of auth-svc (e.g. dns:///auth-svc:50051)', default: '127.0.0.1:50051' }),
  dispatchSvcAddr: text('DISPATCH_SVC_ADDR', { description: 'gRPC target of dispatch-svc', default: '127.0.0.1:50052' }),
  ...gatewayTokenSetting,
  ...grpcClientTlsSettings,
  grpcDeadlineMs: duration('GRPC_DEADLINE', { description: 'deadline of each call to auth-svc and dispatch-svc', default: '2s', minMs: 1 }),
  dispatchSendMaxItems: integer('DISPATCH_SEND_MAX_ITEMS', {
    description:
      'single sends (POST /api/v1/send/) carried by one SendMany call to dispatch-svc at most (fewer when NOTIFY_MAX_BODY_BYTES times this would pass a quarter of the internal 64 MiB gRPC message limit); each keeps its own GRPC_DEADLINE, its time waiting for a call included',
    default: sendManyDefaults.maxItems,
    min: 1,
    max: 500,
  }),
  dispatchSendCalls: integer('DISPATCH_SEND_CALLS', {
    description:
      'SendMany calls to dispatch-svc in flight at once: alone, a send is a call of its own; the sends that arrive while all of them are in flight go together in the next one',
    default: sendManyDefaults.calls,
    min: 1,
  }),
  // May carry a password (`rediss://:password@host:6379`): a secret, so it may come from REDIS_URL_FILE and is never printed.
  redisUrl: url('REDIS_URL', {
    description: 'Redis holding the rate-limit counters shared by all replicas',
    default: 'redis://127.0.0.1:6379',
    protocols: ['redis', 'rediss'],
    secret: true,
  }),
  redisSentinels: custom(
    'REDIS_SENTINELS',
    {
      description:
        'Redis Sentinels, comma-separated host:port: the gateway asks them for the master of REDIS_SENTINEL_NAME and follows its failovers, and of REDIS_URL only the user, password, database and rediss apply (its host is ignored). Empty: REDIS_URL names the Redis',
      default: '',
    },
    parseSentinels,
  ),
  redisSentinelName: text('REDIS_SENTINEL_NAME', { description: 'master group name the REDIS_SENTINELS monitor', default: 'mymaster', pattern: /^\S+$/ }),
  redisSentinelPassword: text('REDIS_SENTINEL_PASSWORD', {
    description: "password of the sentinels themselves (their requirepass), when they have one; the master's is in REDIS_URL",
    default: '',
    secret: true,
  }),
  redisKeyPrefix: text('REDIS_KEY_PREFIX', { description: 'prefix of every Redis key the gateway writes', default: 'notify:' }),
  sendRate: custom(
    'NOTIFY_PUBLIC_SEND_RATE',
    { description: 'default send rate per API key, `<count>/<unit>` with unit s, sec, second, m, min, minute, h, hour, d or day', default: '120/min' },
    parseRate,
  ),
  readRate: custom(
    'NOTIFY_PUBLIC_READ_RATE',
    {
      description:
        'message status reads (GET /api/v1/messages/...) allowed per API key, `<count>/<unit>`; a bucket of its own that never uses up the send rate',
      default: '600/min',
    },
    parseRate,
  ),
  unsubscribeRate: custom(
    'NOTIFY_UNSUBSCRIBE_RATE',
    { description: 'requests to the one-click unsubscribe pages (/u/...) allowed per client address, `<count>/<unit>`', default: '30/min' },
    parseRate,
  ),
  authFailureRate: custom(
    'NOTIFY_AUTH_FAILURE_RATE',
    {
      description:
        'API keys refused with 401 allowed per window, `<count>/<unit>`: per client address for presentations that name no key (past it they are answered 429 unasked, while real keys from that address are still judged), and per key for wrong secrets and revoked keys (past it their refusals are 429)',
      default: '20/min',
    },
    parseRate,
  ),
  trustedProxyHops: integer('TRUSTED_PROXY_HOPS', {
    description:
      'reverse proxies in front of the gateway that append to X-Forwarded-For (1 behind an ingress controller); the client address (API and panel sign-in limits) is that many entries from the end, and X-Forwarded-Proto https counts as HTTPS (Strict-Transport-Security, Secure panel cookies). 0: the TCP peer, X-Forwarded-* ignored',
    default: 0,
    min: 0,
    max: 10,
  }),
  gatewayReplicas: integer('NOTIFY_GATEWAY_REPLICAS', {
    description: 'gateway replicas sharing the send and failed-authentication rates; without Redis each allows its share (rate / replicas)',
    default: 1,
    min: 1,
  }),
  keepAliveTimeoutMs: duration('HTTP_KEEP_ALIVE_TIMEOUT', {
    description:
      'how long an idle client connection is kept open for its next request (announced in Keep-Alive: timeout=); keep it above the idle timeout of every load balancer and client pool in front of the gateway (60 s is common), so that the gateway never closes a connection a client is sending on',
    default: '75s',
    minMs: 1_000,
  }),
  maxBodyBytes: integer('NOTIFY_MAX_BODY_BYTES', {
    description: 'largest request body accepted, in bytes (413 beyond)',
    default: 262_144,
    min: 1,
    max: maxPublicBodyBytes,
  }),
  maxBatchBodyBytes: integer('NOTIFY_MAX_BATCH_BODY_BYTES', {
    description: 'largest batch send body (POST /api/v1/send/batch/) accepted, in bytes (413 beyond)',
    default: 5_242_880,
    min: 1,
    max: maxPublicBodyBytes,
  }),
  // auth-svc writes api_keys.last_used_at only for the Authorize calls it answers (at most once a minute per key), and a
  // cached acceptance makes none: a key in constant use is then seen by auth-svc once per TTL. The default keeps that
  // well inside the minute, so last_used_at stays as meaningful as without the cache.
  authCacheTtlMs: duration('AUTH_CACHE_TTL', {
    description:
      "how long an accepted API key is answered without asking auth-svc (0 disables the cache); a key in use is asked again in the background during the last quarter of it, so no request waits for auth-svc; revocations and plan changes arrive sooner over NATS, and nothing is cached while NATS is unreachable. auth-svc records a key's last use only when asked, so keep it well under a minute (its recording interval)",
    default: '10s',
  }),
  ...natsSettings,
  ...panelConfigSpec,
};
