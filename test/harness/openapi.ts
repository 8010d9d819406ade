// Live responses checked against the gateway's own OpenAPI document: the body against the documented schema of its
// status, and every documented header (present when required, matching its schema when present).
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

type Json = Record<string, unknown>;

export interface LiveResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The response text; JSON for every status of the public API. */
  readonly text: string;
}

/** One problem per line, empty when the response is what the document says. */
export type ResponseCheck = (method: string, path: string, response: LiveResponse) => string[];

const escapePointer = (segment: string): string => segment.replaceAll('~', '~0').replaceAll('/', '~1');

function at(document: Json, pointer: string): Json | undefined {
  let node: unknown = document;
  for (const segment of pointer.split('/').slice(1)) {
    const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
    node = node !== null && typeof node === 'object' ? (node as Json)[key] : undefined;
  }
  return node !== null && typeof node === 'object' ? (node as Json) : undefined;
}

export function openApiResponseCheck(document: Json): ResponseCheck {
  const ajv = new Ajv2020({ allErrors: true });
  ajvFormats.default(ajv);
  // The document's own fields are not schema keywords; its schemas are reached through JSON pointers into it.
  ajv.addVocabulary(Object.keys(document));
  ajv.addSchema(document, 'openapi');
  const validate = (pointer: string, value: unknown): string[] => {
    const validator = ajv.getSchema(`openapi#${pointer}`);
    if (!validator) return [`no schema at ${pointer}`];
    return validator(value) ? [] : (validator.errors ?? []).map((error) => `${pointer}: ${error.instancePath || '(root)'} ${error.message ?? ''}`.trim());
  };

  return (method, path, response) => {
    const operation = `/paths/${escapePointer(path)}/${method.toLowerCase()}`;
    const declaredPointer = `${operation}/responses/${response.status}`;
    const declared = at(document, declaredPointer);
    if (!declared) return [`status ${response.status} is not documented for ${method} ${path}`];
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      return [`the ${response.status} body is not JSON: ${response.text.slice(0, 80)}`];
    }
    const problems = validate(`${declaredPointer}/content/application~1json/schema`, body);
    for (const [name, header] of Object.entries((declared.headers ?? {}) as Record<string, Json>)) {
      const reference = header.$ref;
      const headerPointer = typeof reference === 'string' ? reference.slice(1) : `${declaredPointer}/headers/${escapePointer(name)}`;
      const value = response.headers.get(name);
      if (value === null) {
        if (at(document, headerPointer)?.required === true) problems.push(`header ${name} is missing from the ${response.status}`);
        continue;
      }
      problems.push(...validate(`${headerPointer}/schema`, value).map((problem) => `header ${name}: ${problem}`));
    }
    return problems;
  };
}
