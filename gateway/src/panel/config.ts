// The web panel's environment variables, part of the gateway's (config.ts spreads them in).
import { boolean, custom, duration, parseRate } from '@notify/platform';
import { parseTraceUrlTemplate } from './trace-link.ts';

export const panelConfigSpec = {
  panelCookieSecure: boolean('PANEL_COOKIE_SECURE', {
    description:
      'always mark the panel cookies Secure (set it when TLS ends at a proxy the gateway does not trust); otherwise they are Secure whenever the request came over HTTPS, directly or per X-Forwarded-Proto of a proxy TRUSTED_PROXY_HOPS counts',
    default: false,
  }),
  panelSessionIdleMs: duration('PANEL_SESSION_IDLE_TIMEOUT', {
    description: 'a panel session ends after this long without a request',
    default: '30m',
    minMs: 60_000,
  }),
  panelSessionLifetimeMs: duration('PANEL_SESSION_LIFETIME', {
    description: 'a panel session ends this long after sign-in, however active',
    default: '12h',
    minMs: 60_000,
  }),
  panelSignInAddressRate: custom(
    'PANEL_SIGN_IN_ADDRESS_RATE',
    { description: 'panel sign-in attempts allowed per client address, <count>/<unit>', default: '30/hour' },
    parseRate,
  ),
  panelSignInAccountRate: custom(
    'PANEL_SIGN_IN_ACCOUNT_RATE',
    {
      description:
        'panel sign-in attempts allowed per account (email), <count>/<unit>, each counted before its password is checked; a success starts the count again',
      default: '10/hour',
    },
    parseRate,
  ),
  traceUrlTemplate: custom(
    'NOTIFY_TRACE_URL_TEMPLATE',
    {
      description:
        "link from a message's trace id in the panel to the tracing backend: an http(s) URL with {trace_id} where the id goes (e.g. http://jaeger:16686/trace/{trace_id}); empty shows the id as text",
      default: '',
    },
    parseTraceUrlTemplate,
  ),
};
