// A template's declared variables: its JSON Schema, compiled with ajv once per template version, and the messages
// an integrator reads when `data` does not satisfy it ("name: is required", "count: must be integer").
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
  if (error.keyword === 'required') return `${join(path, error.params['missingProperty'])}: is required`;
  if (error.keyword === 'additionalProperties') return `${join(path, error.params['additionalProperty'])}: is not allowed`;
  const message = error.message ?? 'is invalid';
  return path ? `${path}: ${message}` : message;
}

/** One message per distinct fault, naming the variable at fault where there is one. */
function describeErrors(errors: readonly ErrorObject[]): string[] {
  return [...new Set(errors.map(describe))];
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

  /** Messages for every way `data` breaks the template's schema; empty when it satisfies it or declares none. */
  check(template: SchemaSource, data: unknown): string[] {
    if (!template.variablesSchema) return [];
    const validate = this.#validator(template, template.variablesSchema);
    return validate(data) ? [] : describeErrors(validate.errors ?? []);
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
