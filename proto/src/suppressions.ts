// What a suppression list entry is, for every component that reads or writes one (dispatch-svc keeps the list; the
// gateway judges the public API's filters and paths).

export const suppressionReasons = ['hard_bounce', 'complaint', 'unsubscribed', 'manual'] as const;
export type SuppressionReason = (typeof suppressionReasons)[number];

/** Addresses one call of the public API may add. */
export const maxSuppressionsAdded = 1_000;

/** An erased recipient's entry, listed by its hash (docs/operations.md, "Erasure"): keyed, or an older unkeyed one. */
export const erasedEntryPattern = /^(?:hmac-sha256|sha256):[0-9a-f]{64}$/;
