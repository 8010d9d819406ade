// The bounds of a send's `tags` and `metadata` (docs/contract.md, "Tags and metadata"), beside the SendRequest fields
// they bound: the gateway words them for callers, dispatch-svc re-checks them for the database and every reader.
export const labelLimits = { tags: 10, tagLength: 64, metadataKeys: 20, metadataKeyLength: 40, metadataValueLength: 256 } as const;

/** What a tag and a metadata key are made of: letters, digits, `_` and `-`. */
export const labelCharacters = '[A-Za-z0-9_-]';
