// The caller's own labels on a send (docs/contract.md, "Tags and metadata"): `tags` to find messages by and route their
// events, `metadata` carried back unchanged. Their rules, one schema each, shared by the body's validation, the
// status API's `?tag=` filter and the OpenAPI document; each failure has its own message.

import { labelCharacters, labelLimits } from '@notify/proto';
import type { ErrorObject } from 'ajv';
import { type Text, text } from '../i18n/messages.ts';

export const maxTags = labelLimits.tags;
export const maxTagLength = labelLimits.tagLength;
export const tagPattern = `^${labelCharacters}+$`;
export const maxMetadataKeys = labelLimits.metadataKeys;
export const maxMetadataKeyLength = labelLimits.metadataKeyLength;
export const maxMetadataValueLength = labelLimits.metadataValueLength;

/** One tag; also the status API's `?tag=`. */
export const tagSchema = { type: 'string', minLength: 1, maxLength: maxTagLength, pattern: tagPattern } as const;

const tagExpression = new RegExp(tagPattern);

/** Whether `value` is one tag as a send may give it (the status API's `?tag=`). */
export function isTag(value: string): boolean {
  return value.length <= maxTagLength && tagExpression.test(value);
}

/** Duplicates are refused rather than collapsed: what is stored is exactly what was sent. */
export const tagsSchema = { type: 'array', maxItems: maxTags, uniqueItems: true, items: tagSchema } as const;

/** Flat: every value a string. Keys like tags, shorter; the reserved keys are refused as in `data`. */
export const metadataSchema = {
  type: 'object',
  maxProperties: maxMetadataKeys,
  propertyNames: { minLength: 1, maxLength: maxMetadataKeyLength, pattern: tagPattern },
  noReservedKeys: true,
  additionalProperties: { type: 'string', maxLength: maxMetadataValueLength, noControlCharacters: true },
} as const;

const tagRule = (): Text => text('tags.tag', { max: maxTagLength });
/** A key's own rules fail on `/metadata` itself (propertyNames); a value's on `/metadata/<key>`. */
const metadataRule =
  (onValue: (error: ErrorObject) => Text) =>
  (error: ErrorObject): Text =>
    error.instancePath === '/metadata' ? text('metadata.key', { max: maxMetadataKeyLength }) : onValue(error);

/** The messages of `tags` and `metadata`, by schema keyword; a keyword missing here falls back to the body's own table. */
export const labelMessages: Readonly<Record<string, Readonly<Record<string, (error: ErrorObject) => Text>>>> = {
  tags: {
    type: () => text('tags.type'),
    maxItems: () => text('tags.count', { max: maxTags }),
    uniqueItems: () => text('tags.duplicate'),
    minLength: tagRule,
    maxLength: tagRule,
    pattern: tagRule,
  },
  metadata: {
    type: (error) => text(error.instancePath === '/metadata' ? 'field.type_object' : 'metadata.value_type'),
    maxProperties: () => text('metadata.count', { max: maxMetadataKeys }),
    propertyNames: metadataRule(() => text('metadata.key', { max: maxMetadataKeyLength })),
    minLength: metadataRule(() => text('metadata.key', { max: maxMetadataKeyLength })),
    maxLength: metadataRule(() => text('metadata.value_length', { max: maxMetadataValueLength })),
    pattern: metadataRule(() => text('metadata.key', { max: maxMetadataKeyLength })),
    noReservedKeys: () => text('data.keys'),
    noControlCharacters: () => text('to.control'),
  },
};

/** The labels of a valid body as SendRequest carries them: none is `[]` and `''`. */
export function labelFields(body: { readonly tags?: readonly string[]; readonly metadata?: Readonly<Record<string, string>> }): {
  tags: string[];
  metadataJson: string;
} {
  return { tags: [...(body.tags ?? [])], metadataJson: body.metadata === undefined ? '' : JSON.stringify(body.metadata) };
}
