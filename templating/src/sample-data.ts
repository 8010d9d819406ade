// Sample `data` for a template preview, made from the template's variables schema: for each declared variable, the
// schema's own example, default, const or first enum value when it has one, else a plain value of the declared type.
// A best effort for reading a preview, not a generator of valid instances ($ref and patterns are not followed).

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `first_name` → `First name`: readable in a rendered preview, and it says which variable it stands for. */
function label(name: string): string {
  const words = name
    .replace(/[_-]+/g, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .trim()
    .toLowerCase();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : 'Example';
}

const formats: Readonly<Record<string, string>> = {
  email: 'someone@example.com',
  date: '2026-01-31',
  'date-time': '2026-01-31T09:30:00Z',
  time: '09:30:00Z',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
};

function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((candidate): candidate is string => typeof candidate === 'string' && candidate !== 'null');
  if (isSchema(schema.properties)) return 'object';
  if (schema.items !== undefined) return 'array';
  return undefined;
}

function stringSample(schema: Schema, name: string): string {
  const format = typeof schema.format === 'string' ? formats[schema.format] : undefined;
  let text = format ?? label(name);
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  if (text.length < min) text = text.padEnd(min, 'x');
  return text.slice(0, max);
}

function numberSample(schema: Schema, integer: boolean): number {
  for (const bound of ['minimum', 'exclusiveMinimum'] as const) {
    const value = schema[bound];
    if (typeof value === 'number') return bound === 'minimum' ? value : integer ? Math.floor(value) + 1 : value + 1;
  }
  const maximum = schema.maximum;
  if (typeof maximum === 'number' && maximum < 1) return maximum;
  return integer ? 1 : 1.5;
}

export function sampleValue(schema: unknown, name = '', depth = 0): unknown {
  if (!isSchema(schema) || depth > 8) return null;
  const examples = schema.examples;
  if (Array.isArray(examples) && examples.length > 0) return examples[0];
  for (const keyword of ['default', 'const'] as const) if (keyword in schema) return schema[keyword];
  const choices = schema.enum;
  if (Array.isArray(choices) && choices.length > 0) return choices[0];
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const options = schema[keyword];
    if (Array.isArray(options) && options.length > 0) return sampleValue(options[0], name, depth + 1);
  }
  const allOf = schema.allOf;
  if (Array.isArray(allOf) && allOf.length > 0) {
    // Properties declared across the parts are merged into one object.
    const parts = allOf.map((part) => sampleValue(part, name, depth + 1));
    if (parts.every((part) => isSchema(part))) return Object.assign({}, ...parts);
    return parts[0];
  }
  switch (typeOf(schema)) {
    case 'string':
      return stringSample(schema, name);
    case 'integer':
      return numberSample(schema, true);
    case 'number':
      return numberSample(schema, false);
    case 'boolean':
      return true;
    case 'array': {
      const count = Math.max(1, typeof schema.minItems === 'number' ? schema.minItems : 1);
      return Array.from({ length: Math.min(count, 3) }, () => sampleValue(schema.items, name, depth + 1));
    }
    case 'object': {
      const properties = isSchema(schema.properties) ? schema.properties : {};
      // fromEntries defines properties: a variable named `__proto__` stays a variable, never a prototype.
      return Object.fromEntries(Object.entries(properties).map(([property, propertySchema]) => [property, sampleValue(propertySchema, property, depth + 1)]));
    }
    default:
      return label(name);
  }
}

/** Sample data for a template: an object, empty when the template declares no variables. */
export function sampleData(variablesSchema: unknown): Record<string, unknown> {
  const sample = variablesSchema ? sampleValue(variablesSchema) : {};
  return isSchema(sample) ? sample : {};
}
