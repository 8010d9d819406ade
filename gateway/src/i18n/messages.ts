// Every human-readable text the gateway answers with, in English and Spanish. Codes and field names are never translated;
// clients must not parse these texts (seed, section 7).

export const languages = ['en', 'es'] as const;
export type Language = (typeof languages)[number];
export const defaultLanguage: Language = 'en';

const en = {
  payload_too_large: 'The request body is larger than the limit of {limit} bytes.',
  'auth.missing': 'Authentication credentials were not provided.',
  'auth.scheme': 'The Authorization header must have the form "Api-Key <key>".',
  'auth.invalid': 'Invalid or revoked API key.',
  'organization.missing': 'The X-Organization-ID header is required.',
  'organization.invalid': 'The X-Organization-ID header must be a positive integer.',
  permission_denied: 'This API key may not operate on the given organization.',
  plan_blocked: "The organization's plan does not allow more sends.",
  throttled: 'Request was throttled. Expected available in {seconds} seconds.',
  'media_type.json': 'The Content-Type must be application/json (UTF-8).',
  'media_type.encoding': 'Content-Encoding is not supported; send the body uncompressed.',
  'parse.incomplete': 'The request body was not received completely.',
  'parse.utf8': 'The request body is not valid UTF-8.',
  'parse.json': 'The request body is not valid JSON.',
  'parse.object': 'The request body must be a JSON object.',
  'idempotency_key.invalid': 'The Idempotency-Key header must be a UUID.',
  'idempotency_key.mismatch': 'This Idempotency-Key was already used with a different request.',
  idempotency_key_in_use: 'A request with this Idempotency-Key is still being processed; retry in a moment.',
  template_not_found: 'No template with this slug exists in the project of this API key.',
  service_unavailable: 'The service is temporarily unavailable; retry later.',
  internal_error: 'An internal error occurred.',
  not_found: 'Not found.',
  method_not_allowed: 'Method "{method}" not allowed.',
  'field.required': 'This field is required.',
  'field.unknown': 'Unknown field.',
  'field.type_string': 'Expected a string.',
  'field.type_object': 'Expected a JSON object.',
  'field.blank': 'This field may not be blank.',
  'field.max_length': 'Ensure this field has no more than {max} characters.',
  'template.slug': 'Use only letters, digits, underscores and hyphens.',
  'template.inactive': 'This template is inactive.',
  'to.control': 'Control characters, such as line breaks, are not allowed.',
  'to.email': 'Enter a valid email address.',
  'to.suppressed': 'This address is suppressed ({reason}, since {since}).',
  'channel.choice': 'The only supported channel is "email".',
  'data.depth': 'Nesting is limited to {max} levels.',
  'data.keys': 'The keys "__proto__", "constructor" and "prototype" are not allowed.',
  'data.array_items': 'A list in the data may hold at most {max} items.',
  'data.elements': 'The data may hold at most {max} values in all, counting those nested in objects and lists.',
  'data.invalid': 'The data does not match the variables of the template.',
  // A template's declared variables (dispatch-svc's data_invalid violations, rendered by send/variable-faults.ts).
  'variables.required': '{variable}: is required.',
  'variables.not_allowed': '{variable}: is not a variable of this template.',
  'variables.type': '{variable}: must be of type {types}.',
  'variables.type.string': '{variable}: must be a string.',
  'variables.type.integer': '{variable}: must be an integer.',
  'variables.type.number': '{variable}: must be a number.',
  'variables.type.boolean': '{variable}: must be true or false.',
  'variables.type.object': '{variable}: must be a JSON object.',
  'variables.type.array': '{variable}: must be an array.',
  'variables.type.null': '{variable}: must be null.',
  'variables.min_length': '{variable}: must have at least {limit} characters.',
  'variables.max_length': '{variable}: must have at most {limit} characters.',
  'variables.minimum': '{variable}: must be greater than or equal to {limit}.',
  'variables.maximum': '{variable}: must be less than or equal to {limit}.',
  'variables.exclusive_minimum': '{variable}: must be greater than {limit}.',
  'variables.exclusive_maximum': '{variable}: must be less than {limit}.',
  'variables.min_items': '{variable}: must have at least {limit} items.',
  'variables.max_items': '{variable}: must have at most {limit} items.',
  'variables.enum': '{variable}: must be one of the allowed values.',
  'variables.const': '{variable}: must be the value the template requires.',
  'variables.pattern': '{variable}: must match the pattern "{pattern}".',
  'variables.format': '{variable}: must have the format "{format}".',
  'variables.invalid': '{variable}: does not satisfy the rule "{rule}" of the template.',
  // Reading messages (GET /api/v1/messages/...).
  message_not_found: 'No message with this id exists in the project of this API key.',
  'messages.status': 'Must be one of: {choices}.',
  'messages.time': 'Enter an RFC 3339 time, such as 2026-01-31T09:30:00Z.',
  'messages.limit': 'Must be an integer between 1 and {max}.',
  'messages.cursor': 'This cursor is not one this API gave; start again without it.',
  'messages.repeated': 'Give this parameter once.',
  // Batch sends (POST /api/v1/send/batch/).
  'batch.type_list': 'Expected a list of messages.',
  'batch.empty': 'Give at least one message.',
  'batch.too_many': 'A batch may hold at most {max} messages.',
  'data.unstorable': 'The data holds a value that cannot be stored, such as the character U+0000.',
} as const;

export type MessageKey = keyof typeof en;

// Typed against the English catalogue: a key missing here does not compile.
const es: Record<MessageKey, string> = {
  payload_too_large: 'El cuerpo de la solicitud supera el límite de {limit} bytes.',
  'auth.missing': 'No se proporcionaron las credenciales de autenticación.',
  'auth.scheme': 'El encabezado Authorization debe tener la forma "Api-Key <clave>".',
  'auth.invalid': 'Clave de API no válida o revocada.',
  'organization.missing': 'El encabezado X-Organization-ID es obligatorio.',
  'organization.invalid': 'El encabezado X-Organization-ID debe ser un número entero positivo.',
  permission_denied: 'Esta clave de API no puede operar sobre la organización indicada.',
  plan_blocked: 'El plan de la organización no permite más envíos.',
  throttled: 'La solicitud fue limitada. Se espera que esté disponible en {seconds} segundos.',
  'media_type.json': 'El Content-Type debe ser application/json (UTF-8).',
  'media_type.encoding': 'No se admite Content-Encoding; envíe el cuerpo sin comprimir.',
  'parse.incomplete': 'El cuerpo de la solicitud no se recibió completo.',
  'parse.utf8': 'El cuerpo de la solicitud no es UTF-8 válido.',
  'parse.json': 'El cuerpo de la solicitud no es JSON válido.',
  'parse.object': 'El cuerpo de la solicitud debe ser un objeto JSON.',
  'idempotency_key.invalid': 'El encabezado Idempotency-Key debe ser un UUID.',
  'idempotency_key.mismatch': 'Esta Idempotency-Key ya se usó con una solicitud diferente.',
  idempotency_key_in_use: 'Una solicitud con esta Idempotency-Key todavía se está procesando; reintente en un momento.',
  template_not_found: 'No existe ninguna plantilla con este identificador en el proyecto de esta clave de API.',
  service_unavailable: 'El servicio no está disponible temporalmente; reintente más tarde.',
  internal_error: 'Se produjo un error interno.',
  not_found: 'No encontrado.',
  method_not_allowed: 'Método "{method}" no permitido.',
  'field.required': 'Este campo es obligatorio.',
  'field.unknown': 'Campo desconocido.',
  'field.type_string': 'Se esperaba una cadena de texto.',
  'field.type_object': 'Se esperaba un objeto JSON.',
  'field.blank': 'Este campo no puede estar vacío.',
  'field.max_length': 'Asegúrese de que este campo no tenga más de {max} caracteres.',
  'template.slug': 'Use solo letras, dígitos, guiones bajos y guiones.',
  'template.inactive': 'Esta plantilla está inactiva.',
  'to.control': 'No se permiten caracteres de control, como los saltos de línea.',
  'to.email': 'Introduzca una dirección de correo electrónico válida.',
  'to.suppressed': 'Esta dirección está suprimida ({reason}, desde {since}).',
  'channel.choice': 'El único canal admitido es "email".',
  'data.depth': 'El anidamiento está limitado a {max} niveles.',
  'data.keys': 'Las claves "__proto__", "constructor" y "prototype" no están permitidas.',
  'data.array_items': 'Una lista de los datos puede contener como máximo {max} elementos.',
  'data.elements': 'Los datos pueden contener como máximo {max} valores en total, contando los anidados en objetos y listas.',
  'data.invalid': 'Los datos no coinciden con las variables de la plantilla.',
  'variables.required': '{variable}: es obligatorio.',
  'variables.not_allowed': '{variable}: no es una variable de esta plantilla.',
  'variables.type': '{variable}: debe ser de tipo {types}.',
  'variables.type.string': '{variable}: debe ser una cadena de texto.',
  'variables.type.integer': '{variable}: debe ser un número entero.',
  'variables.type.number': '{variable}: debe ser un número.',
  'variables.type.boolean': '{variable}: debe ser verdadero o falso (true o false).',
  'variables.type.object': '{variable}: debe ser un objeto JSON.',
  'variables.type.array': '{variable}: debe ser una lista (array).',
  'variables.type.null': '{variable}: debe ser nulo (null).',
  'variables.min_length': '{variable}: debe tener al menos {limit} caracteres.',
  'variables.max_length': '{variable}: debe tener como máximo {limit} caracteres.',
  'variables.minimum': '{variable}: debe ser mayor o igual que {limit}.',
  'variables.maximum': '{variable}: debe ser menor o igual que {limit}.',
  'variables.exclusive_minimum': '{variable}: debe ser mayor que {limit}.',
  'variables.exclusive_maximum': '{variable}: debe ser menor que {limit}.',
  'variables.min_items': '{variable}: debe tener al menos {limit} elementos.',
  'variables.max_items': '{variable}: debe tener como máximo {limit} elementos.',
  'variables.enum': '{variable}: debe ser uno de los valores permitidos.',
  'variables.const': '{variable}: debe ser el valor que exige la plantilla.',
  'variables.pattern': '{variable}: debe coincidir con el patrón "{pattern}".',
  'variables.format': '{variable}: debe tener el formato "{format}".',
  'variables.invalid': '{variable}: no cumple la regla "{rule}" de la plantilla.',
  message_not_found: 'No existe ningún mensaje con este id en el proyecto de esta clave de API.',
  'messages.status': 'Debe ser uno de: {choices}.',
  'messages.time': 'Indique una hora RFC 3339, como 2026-01-31T09:30:00Z.',
  'messages.limit': 'Debe ser un número entero entre 1 y {max}.',
  'messages.cursor': 'Este cursor no lo dio esta API; vuelva a empezar sin él.',
  'messages.repeated': 'Indique este parámetro una sola vez.',
  'batch.type_list': 'Se esperaba una lista de mensajes.',
  'batch.empty': 'Indique al menos un mensaje.',
  'batch.too_many': 'Un lote puede contener como máximo {max} mensajes.',
  'data.unstorable': 'Los datos contienen un valor que no se puede guardar, como el carácter U+0000.',
};

/** Every text by language; both name the same placeholders (checked by messages.test.ts). */
export const catalogues: Readonly<Record<Language, Readonly<Record<MessageKey, string>>>> = { en, es };

/** A message still to be rendered in the caller's language. */
export interface Text {
  readonly key: MessageKey;
  readonly params?: Readonly<Record<string, string | number>>;
}

export function text(key: MessageKey, params?: Text['params']): Text {
  return params === undefined ? { key } : { key, params };
}

/** Renders `message` in `language`, filling `{name}` placeholders from its params. */
export function translate(language: Language, message: Text): string {
  const template = catalogues[language][message.key];
  const params = message.params ?? {};
  return template.replace(/\{(\w+)\}/g, (placeholder, name: string) => (Object.hasOwn(params, name) ? String(params[name]) : placeholder));
}
