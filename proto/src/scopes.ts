// What an API key may do: its scopes (docs/contract.md, "API keys and scopes"). A key carries a set of them, stored
// expanded; a request names the scopes in full or by preset. `sending` is what every key could do before scopes
// existed, and stays the default; `full` is every scope. A key with `keys:manage` may make and revoke keys whose
// scopes are all among its own, so no key hands out more than it has. A key may also be limited to sending From some
// of its organization's domains (`from_domains`, empty: no limit); a limited key hands out only limits within its own.

export const scopes = [
  'send',
  'messages:read',
  'templates:read',
  'templates:write',
  'suppressions:read',
  'suppressions:write',
  'suppressions:reactivate',
  'webhooks:write',
  'domains:write',
  'stats:read',
  'keys:manage',
] as const;

export type Scope = (typeof scopes)[number];

export const scopePresets = {
  sending: ['send', 'messages:read'],
  full: scopes,
} as const satisfies Record<string, readonly Scope[]>;

export type ScopePreset = keyof typeof scopePresets;

const known = new Set<string>(scopes);

export function isScope(value: string): value is Scope {
  return known.has(value);
}

/** The words of `requested` that are neither a scope nor a preset, in order. */
export function unknownScopeWords(requested: readonly string[]): string[] {
  return requested.filter((word) => !isScope(word) && !Object.hasOwn(scopePresets, word));
}

/**
 * The scopes named by `requested` (scopes and presets, in any order, repeated or not), in the order of `scopes`; the
 * `sending` preset when nothing is named. Throws a RangeError naming every word that is neither.
 */
export function expandScopes(requested: readonly string[]): Scope[] {
  if (requested.length === 0) return [...scopePresets.sending];
  const unknown = unknownScopeWords(requested);
  if (unknown.length > 0)
    throw new RangeError(
      `unknown scope ${unknown.map((word) => JSON.stringify(word)).join(', ')}; scopes are ${scopes.join(', ')}, or the presets sending and full`,
    );
  const chosen = new Set(requested.flatMap((word): readonly string[] => (isScope(word) ? [word] : scopePresets[word as ScopePreset])));
  return scopes.filter((scope) => chosen.has(scope));
}

/** The first of `wanted` that `held` lacks, or undefined when every one is held. */
export function missingScope(held: readonly string[], wanted: readonly string[]): string | undefined {
  return wanted.find((scope) => !held.includes(scope));
}

/** The most sending domains a key may be limited to (`from_domains`). */
export const maxKeyFromDomains = 50;
