// A send's `tags` and `metadata` (docs/contract.md, "Tags and metadata"), re-checked for what the database and every
// reader rely on: the gateway words the rules for callers; a caller that skipped it gets INVALID_ARGUMENT here.
import { type dispatch, labelCharacters, labelLimits } from '@notify/proto';

export const tagPattern = new RegExp(`^${labelCharacters}{1,${labelLimits.tagLength}}$`);
const metadataKeyPattern = new RegExp(`^${labelCharacters}{1,${labelLimits.metadataKeyLength}}$`);
const reservedKeys = new Set(['__proto__', 'constructor', 'prototype']);
const controlCharacters = /\p{Cc}/u;

function parseMetadata(json: string): unknown {
  if (json === '') return {};
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

function isMetadata(value: unknown): value is Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const entries = Object.entries(value);
  return (
    entries.length <= labelLimits.metadataKeys &&
    entries.every(
      ([key, item]) =>
        metadataKeyPattern.test(key) &&
        !reservedKeys.has(key) &&
        typeof item === 'string' &&
        item.length <= labelLimits.metadataValueLength &&
        !controlCharacters.test(item),
    )
  );
}

/** What is wrong with the request's labels, one fault per field. */
export function labelFaults(request: dispatch.SendRequest__Output): string[] {
  const faults: string[] = [];
  const { tags } = request;
  if (tags.length > labelLimits.tags || new Set(tags).size !== tags.length || !tags.every((tag) => tagPattern.test(tag))) {
    faults.push(`tags: at most ${labelLimits.tags} distinct tags of 1-${labelLimits.tagLength} characters of A-Z, a-z, 0-9, _ and -`);
  }
  if (!isMetadata(parseMetadata(request.metadataJson))) {
    faults.push(
      `metadata_json: must be a JSON object of at most ${labelLimits.metadataKeys} keys, each with a string of at most ${labelLimits.metadataValueLength} characters`,
    );
  }
  return faults;
}

/** The labels of a request labelFaults accepted. */
export function labelsOf(request: dispatch.SendRequest__Output): { tags: readonly string[]; metadata: Record<string, string> } {
  return { tags: request.tags, metadata: parseMetadata(request.metadataJson) as Record<string, string> };
}
