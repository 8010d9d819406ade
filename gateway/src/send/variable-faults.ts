// dispatch-svc refuses `data` that breaks a template's declared variables with one structured violation per fault
// (`{"path":"amount","keyword":"type","params":{"type":"integer"}}`, see dispatch-svc templates/variables-schema.ts);
// this turns each into a text of the caller's language that names the variable.
import type { FieldMessage } from '../errors/api-error.ts';
import { type MessageKey, type Text, text } from '../i18n/messages.ts';

interface Violation {
  readonly path: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
}

const knownTypes = {
  string: 'variables.type.string',
  integer: 'variables.type.integer',
  number: 'variables.type.number',
  boolean: 'variables.type.boolean',
  object: 'variables.type.object',
  array: 'variables.type.array',
  null: 'variables.type.null',
} as const satisfies Record<string, MessageKey>;

const limitKeys = {
  minLength: 'variables.min_length',
  maxLength: 'variables.max_length',
  minimum: 'variables.minimum',
  maximum: 'variables.maximum',
  exclusiveMinimum: 'variables.exclusive_minimum',
  exclusiveMaximum: 'variables.exclusive_maximum',
  minItems: 'variables.min_items',
  maxItems: 'variables.max_items',
} as const satisfies Record<string, MessageKey>;

function parse(entry: string): Violation | undefined {
  let value: unknown;
  try {
    value = JSON.parse(entry);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { path, keyword, params } = value as Record<string, unknown>;
  if (typeof path !== 'string' || typeof keyword !== 'string') return undefined;
  const known = typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
  return { path, keyword, params: known };
}

function typeText(variable: string, type: unknown): Text | undefined {
  const types = typeof type === 'string' ? [type] : Array.isArray(type) && type.every((name) => typeof name === 'string') ? (type as string[]) : [];
  if (types.length === 0) return undefined;
  const [only] = types;
  if (types.length === 1 && only !== undefined && Object.hasOwn(knownTypes, only)) return text(knownTypes[only as keyof typeof knownTypes], { variable });
  // Several allowed types ("string or null"): the JSON Schema names themselves, which read the same in every language.
  return text('variables.type', { variable, types: types.join(', ') });
}

function render(variable: string, { keyword, params }: Violation): Text | undefined {
  if (keyword === 'required') return text('variables.required', { variable });
  if (keyword === 'additionalProperties') return text('variables.not_allowed', { variable });
  if (keyword === 'type') return typeText(variable, params.type);
  if (Object.hasOwn(limitKeys, keyword)) {
    const limit = params.limit;
    return typeof limit === 'number' ? text(limitKeys[keyword as keyof typeof limitKeys], { variable, limit }) : undefined;
  }
  if (keyword === 'enum') return text('variables.enum', { variable });
  if (keyword === 'const') return text('variables.const', { variable });
  if (keyword === 'pattern' && typeof params.pattern === 'string') return text('variables.pattern', { variable, pattern: params.pattern });
  if (keyword === 'format' && typeof params.format === 'string') return text('variables.format', { variable, format: params.format });
  return undefined;
}

/**
 * The message for one entry of dispatch-svc's data_invalid trailer. An entry that is not a violation (an older
 * dispatch-svc sent plain English messages) is passed on verbatim rather than lost.
 */
export function variableFault(entry: string): FieldMessage {
  const violation = parse(entry);
  if (!violation) return entry;
  // A fault of `data` as a whole (minProperties...) is named after the field that holds it.
  const variable = violation.path === '' ? 'data' : violation.path;
  return render(variable, violation) ?? text('variables.invalid', { variable, rule: violation.keyword });
}
