// The body of POST /api/v1/send/batch/: `{"messages": [<send body>, ...]}`. What is wrong with the batch as a whole is
// one 422 for the request; each item is then judged on its own with the send's own validation (validation.ts).
import { FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { type Validation, validateSendBody } from './validation.ts';

/** Items of one batch at most (dispatch-svc holds the same limit). */
export const maxBatchItems = 500;

/** The `messages` array, or 422 naming `messages` (missing, not a list, empty, too long) and any unknown field. */
export function batchItems(input: Record<string, unknown>): readonly unknown[] {
  const fields = new Map<string, FieldMessage[]>();
  for (const field of Object.keys(input)) {
    if (field !== 'messages') fields.set(field, [text('field.unknown')]);
  }
  const messages = input.messages;
  if (!Object.hasOwn(input, 'messages')) fields.set('messages', [text('field.required')]);
  else if (!Array.isArray(messages)) fields.set('messages', [text('batch.type_list')]);
  else if (messages.length === 0) fields.set('messages', [text('batch.empty')]);
  else if (messages.length > maxBatchItems) fields.set('messages', [text('batch.too_many', { max: maxBatchItems })]);
  if (fields.size > 0) throw new FieldErrors(fields);
  return messages as unknown[];
}

/** Field of an item-wide refusal: not a field of the item, but the item itself (an item that is not an object, 403, 429). */
export const nonFieldErrors = 'non_field_errors';

/** One item judged exactly like a send body; an item that is not a JSON object is refused as a whole. */
export function validateBatchItem(item: unknown): Validation {
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return { valid: false, fields: new Map([[nonFieldErrors, [text('field.type_object')]]]) };
  return validateSendBody(item as Record<string, unknown>);
}
