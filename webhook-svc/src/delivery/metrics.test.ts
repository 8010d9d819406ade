import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry } from '@notify/platform';
import { createWebhookMetrics } from './metrics.ts';

test("every attempt result, disabling reason and busy endpoint's action is exported from the start, at zero", async () => {
  const registry = createRegistry('webhook-svc');
  createWebhookMetrics(registry);
  const page = await registry.metrics();
  for (const result of ['succeeded', 'retrying', 'failed']) {
    assert.match(page, new RegExp(`notify_webhook_attempts_total\\{[^}]*result="${result}"[^}]*\\} 0`));
    assert.match(page, new RegExp(`notify_webhook_attempt_duration_seconds_bucket\\{[^}]*result="${result}"`));
  }
  for (const reason of ['gone', 'failing']) assert.match(page, new RegExp(`notify_webhook_endpoints_disabled_total\\{[^}]*reason="${reason}"[^}]*\\} 0`));
  for (const action of ['parked', 'put_back']) assert.match(page, new RegExp(`notify_webhook_endpoint_busy_total\\{[^}]*action="${action}"[^}]*\\} 0`));
});
