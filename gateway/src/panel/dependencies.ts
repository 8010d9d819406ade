// What the panel works with, built from the gateway's configuration: its gRPC clients, the session store and the
// sign-in limiter (both on the gateway's Redis).

import { type ConfigOf, channelCredentials, GrpcClient, type Logger, type Registry } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import type { Redis } from 'ioredis';
import type { PanelAuthClient, PanelQueryClient } from './clients.ts';
import type { panelConfigSpec } from './config.ts';
import { SignInLimiter } from './security/sign-in-limiter.ts';
import { SessionStore } from './sessions/session-store.ts';

export interface PanelDeps {
  readonly auth: PanelAuthClient;
  readonly dispatch: PanelQueryClient;
  readonly sessions: SessionStore;
  readonly signInLimiter: SignInLimiter;
  readonly logger: Logger;
  /** PANEL_COOKIE_SECURE. */
  readonly cookieSecure: boolean;
  /** NOTIFY_TRACE_URL_TEMPLATE; '' shows trace ids as text. */
  readonly traceUrlTemplate: string;
}

export interface PanelSetup {
  readonly config: ConfigOf<typeof panelConfigSpec> & {
    readonly authSvcAddr: string;
    readonly dispatchSvcAddr: string;
    readonly gatewayToken: string;
    readonly grpcTlsCaFile: string;
    readonly grpcDeadlineMs: number;
    readonly redisKeyPrefix: string;
  };
  readonly redis: Redis;
  readonly logger: Logger;
  /** Where the panel's gRPC client calls are counted, beside the API's. */
  readonly registry: Registry;
}

export function createPanelDeps({ config, redis, logger, registry }: PanelSetup): { deps: PanelDeps; close(): void } {
  const grpcOptions = { token: config.gatewayToken, deadlineMs: config.grpcDeadlineMs, registry, credentials: channelCredentials(config) };
  const auth = new GrpcClient(authProto.PanelAuthService.service, config.authSvcAddr, grpcOptions);
  const dispatch = new GrpcClient(dispatchProto.PanelService.service, config.dispatchSvcAddr, grpcOptions);
  return {
    deps: {
      auth,
      dispatch,
      sessions: new SessionStore({ redis, keyPrefix: config.redisKeyPrefix, idleMs: config.panelSessionIdleMs, lifetimeMs: config.panelSessionLifetimeMs }),
      signInLimiter: new SignInLimiter({
        redis,
        keyPrefix: config.redisKeyPrefix,
        addressRate: config.panelSignInAddressRate,
        accountRate: config.panelSignInAccountRate,
      }),
      logger,
      cookieSecure: config.panelCookieSecure,
      traceUrlTemplate: config.traceUrlTemplate,
    },
    close() {
      auth.close();
      dispatch.close();
    },
  };
}
