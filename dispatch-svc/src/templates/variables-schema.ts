// A template's declared variables: its JSON Schema, compiled with ajv once per template version, and what is wrong when
// `data` does not satisfy it: English messages for the panel preview ("name: is required"), and structured violations
// for Send's data_invalid refusal, which the gateway renders in the caller's language.
import { Ajv, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';

/** The parts of a template row that identify and carry its schema. */
export interface SchemaSource {
  readonly id: number;
  readonly version: number;
  readonly variablesSchema: AnySchemaObject | null;
}

/** JSON pointer (`/items/0/name`) to the dotted path integrators write (`items.0.name`). */
function dottedPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
}

const join = (path: string, name: unknown): string => (path ? `${path}.${String(name)}` : String(name));

function describe(error: ErrorObject): string {
  const path = dottedPath(error.instancePath);
  if (error.keyword === 'required') return `${join(path, error.params.missingProperty)}: is required`;
  if (error.keyword === 'additionalProperties') return `${join(path, error.params.additionalProperty)}: is not allowed`;
  const message = error.message ?? 'is invalid';
  return path ? `${path}: ${message}` : message;
}

/** One message per distinct fault, naming the variable at fault where there is one. */
function describeErrors(errors: readonly ErrorObject[]): string[] {
  return [...new Set(errors.map(describe))];
}

/**
 * One way `data` breaks the schema, in terms a reader of any language can be told: the dotted path of the variable
 * ('' for `data` itself), the ajv keyword that refused it, and the few parameters its text needs.
 */
export interface Violation {
  readonly path: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, string | number | readonly string[]>>;
}

// The parameters worth sending per keyword. Others (enum's allowed values, const's value) can be as large as the
// schema itself and would only bloat the trailer, whose size gRPC limits.
const sentParams: Readonly<Record<string, readonly string[]>> = {
  type: ['type'],
  minLength: ['limit'],
  maxLength: ['limit'],
  minimum: ['limit'],
  maximum: ['limit'],
  exclusiveMinimum: ['limit'],
  exclusiveMaximum: ['limit'],
  minItems: ['limit'],
  maxItems: ['limit'],
  pattern: ['pattern'],
  format: ['format'],
};

function violation(error: ErrorObject): Violation {
  const path = dottedPath(error.instancePath);
  // These two are reported on the object that holds the variable; the integrator thinks of the variable itself.
  if (error.keyword === 'required') return { path: join(path, error.params.missingProperty), keyword: 'required', params: {} };
  if (error.keyword === 'additionalProperties') return { path: join(path, error.params.additionalProperty), keyword: 'additionalProperties', params: {} };
  const params: Record<string, string | number | readonly string[]> = {};
  for (const name of sentParams[error.keyword] ?? []) {
    const value: unknown = error.params[name];
    if (typeof value === 'string' || typeof value === 'number') params[name] = value;
    else if (Array.isArray(value)) params[name] = value.map(String);
  }
  return { path, keyword: error.keyword, params };
}

/**
 * A violation as one entry of the `notify-field-errors` trailer: a JSON object in a string, because the trailer is a
 * JSON array of strings for every refusal (PutTemplate's entries stay plain messages).
 */
export function encodeViolation(violation: Violation): string {
  return JSON.stringify(violation);
}

function distinctViolations(validate: ValidateFunction, data: unknown): Violation[] {
  if (validate(data)) return [];
  const distinct = new Map<string, Violation>();
  for (const error of validate.errors ?? []) {
    const found = violation(error);
    distinct.set(encodeViolation(found), found);
  }
  return [...distinct.values()];
}

export class VariablesSchemas {
  readonly #ajv: Ajv;
  /** Insertion-ordered, so the first key is the least recently used; bounded because templates come and go. */
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly #maxCached: number;

  constructor(options: { maxCached?: number } = {}) {
    this.#maxCached = options.maxCached ?? 1_000;
    // strict: a misspelt keyword ("requird") is refused when the template is saved instead of silently checking nothing.
    this.#ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false });
    ajvFormats.default(this.#ajv);
  }

  /** Why `schema` cannot be a template's variables schema, or undefined when it compiles. */
  problem(schema: unknown): string | undefined {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
    try {
      this.#compile(schema);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** English messages for every way `data` breaks the template's schema (the panel preview); empty when it satisfies it or declares none. */
  check(template: SchemaSource, data: unknown): string[] {
    if (!template.variablesSchema) return [];
    const validate = this.#validator(template, template.variablesSchema);
    return validate(data) ? [] : describeErrors(validate.errors ?? []);
  }

  /** Every distinct way `data` breaks the template's schema; empty when it satisfies it or declares none. */
  violations(template: SchemaSource, data: unknown): Violation[] {
    if (!template.variablesSchema) return [];
    return distinctViolations(this.#validator(template, template.variablesSchema), data);
  }

  /** As violations, for a schema no template version carries (the API's render of inline texts): compiled, not kept. */
  unsavedViolations(schema: AnySchemaObject, data: unknown): Violation[] {
    return distinctViolations(this.#compile(schema), data);
  }

  #validator(template: SchemaSource, schema: AnySchemaObject): ValidateFunction {
    const key = `${template.id}:${template.version}`;
    let validate = this.#compiled.get(key);
    if (validate) {
      this.#compiled.delete(key);
    } else {
      validate = this.#compile(schema);
      if (this.#compiled.size >= this.#maxCached) {
        const oldest = this.#compiled.keys().next().value;
        if (oldest !== undefined) this.#compiled.delete(oldest);
      }
    }
    this.#compiled.set(key, validate);
    return validate;
  }

  #compile(schema: AnySchemaObject): ValidateFunction {
    try {
      return this.#ajv.compile(schema);
    } finally {
      // The compiled function stands alone; forgetting the schema keeps ajv's own cache from growing with every
      // template version and lets two templates use the same `$id` without colliding.
      this.#ajv.removeSchema(schema);
    }
  }
}
