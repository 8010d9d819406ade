// From a message's trace id to its trace in the operator's tracing backend (Grafana/Tempo, Jaeger, ...):
// NOTIFY_TRACE_URL_TEMPLATE with the id in place of {trace_id}, nothing else encoded, so any backend's URL works as is.

const placeholder = '{trace_id}';
// W3C trace ids are 32 lowercase hex digits: nothing in one can change what the template's URL means.
const traceIdPattern = /^[0-9a-f]{32}$/;

const fill = (template: string, traceId: string): string => template.replaceAll(placeholder, traceId);

/** NOTIFY_TRACE_URL_TEMPLATE: '' (ids are shown as text), or a template that is an http(s) URL once filled in. */
export function parseTraceUrlTemplate(raw: string): string {
  const template = raw.trim();
  if (template === '') return '';
  if (!template.includes(placeholder)) throw new Error(`must contain ${placeholder} where the trace id goes`);
  let url: URL;
  try {
    url = new URL(fill(template, '4bf92f3577b34da6a3ce929d0e0e4736'));
  } catch {
    throw new Error(`must be a URL once ${placeholder} is filled in`);
  }
  // The panel links there: a web page, never a javascript: or data: URL.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must use http or https');
  return template;
}

/** The trace's page, or undefined without a template or without a trace id (messages accepted before ids were kept). */
export function traceUrl(template: string, traceId: string): string | undefined {
  return template && traceIdPattern.test(traceId) ? fill(template, traceId) : undefined;
}
