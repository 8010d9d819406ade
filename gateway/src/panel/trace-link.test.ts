// NOTIFY_TRACE_URL_TEMPLATE, read through the gateway's whole configuration spec as main.ts reads it, and the links
// made from it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@notify/platform';
import { configSpec } from '../config.ts';
import { traceUrl } from './trace-link.ts';

const required = { GATEWAY_TOKEN: 'gateway-token-of-at-least-some-length' };
const grafana = 'https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"{trace_id}"}]}';
const jaeger = 'http://jaeger:16686/trace/{trace_id}';
const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';

test("by default there is no template, and Grafana's and Jaeger's links are taken as written", () => {
  assert.equal(loadConfig(configSpec, required).traceUrlTemplate, '');
  assert.equal(loadConfig(configSpec, { ...required, NOTIFY_TRACE_URL_TEMPLATE: grafana }).traceUrlTemplate, grafana);
  assert.equal(loadConfig(configSpec, { ...required, NOTIFY_TRACE_URL_TEMPLATE: ` ${jaeger}\n` }).traceUrlTemplate, jaeger);
});

test('a template that is not an http(s) URL, or has no {trace_id}, stops the gateway, listed with the other faults', () => {
  const faults = {
    'http://jaeger:16686/search': /must contain \{trace_id\} where the trace id goes/,
    '/trace/{trace_id}': /must be a URL once \{trace_id\} is filled in/,
    'javascript:alert(1)//{trace_id}': /must use http or https/,
    'jaeger:16686/trace/{trace_id}': /must use http or https/,
  };
  for (const [template, fault] of Object.entries(faults)) {
    assert.throws(
      () => loadConfig(configSpec, { ...required, NOTIFY_TRACE_URL_TEMPLATE: template, TRUSTED_PROXY_HOPS: '-1' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        const shown = error.faults.find((line) => line.startsWith('NOTIFY_TRACE_URL_TEMPLATE: ')) ?? '';
        assert.match(shown, fault, template);
        assert.ok(shown.endsWith(`(got ${JSON.stringify(template)})`), shown);
        assert.ok(error.faults.some((line) => line.startsWith('TRUSTED_PROXY_HOPS: ')));
        return true;
      },
    );
  }
});

test('the trace id takes the place of every {trace_id}, and nothing else of the template changes', () => {
  assert.equal(traceUrl(grafana, traceId), `https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"${traceId}"}]}`);
  assert.equal(traceUrl('https://tempo.example/{trace_id}?q={trace_id}', traceId), `https://tempo.example/${traceId}?q=${traceId}`);
});

test('without a template, or without a W3C trace id, there is no link', () => {
  assert.equal(traceUrl('', traceId), undefined);
  for (const notAnId of ['', traceId.toUpperCase(), `${traceId}&x=1`, traceId.slice(1)]) assert.equal(traceUrl(jaeger, notAnId), undefined, notAnId);
});
