import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRegistry } from '@notify/platform';
import { createMailerMetrics, deliveryLabels, failureReasons } from './metrics.ts';

describe('mailer metrics', () => {
  it('labels a failed delivery with its reason, and a sent or deferred one with none', () => {
    assert.deepEqual(deliveryLabels('failed', 'retries_exhausted'), { outcome: 'failed', reason: 'retries_exhausted' });
    assert.deepEqual(deliveryLabels('sent', undefined), { outcome: 'sent' });
    assert.deepEqual(deliveryLabels('deferred', undefined), { outcome: 'deferred' });
    assert.deepEqual(deliveryLabels('sent', 'rejected'), { outcome: 'sent' }, 'a reason goes with a failure only');
  });

  it('exports every outcome, and a failure of each reason, at zero before the first delivery', async () => {
    const registry = createRegistry('mailer-svc');
    const metrics = createMailerMetrics(registry);
    const series = (await metrics.deliveries.get()).values.map((value) => [value.labels.outcome, value.labels.reason, value.value]);
    assert.deepEqual(series, [['sent', undefined, 0], ['deferred', undefined, 0], ...failureReasons.map((reason) => ['failed', reason, 0])]);
    assert.deepEqual([...failureReasons].sort(), ['rejected', 'render_failed', 'retries_exhausted', 'too_old', 'unreadable_job']);
    metrics.deliveries.inc(deliveryLabels('failed', 'too_old'));
    assert.match(await registry.metrics(), /^notify_deliveries_total\{outcome="failed",reason="too_old"(,service="mailer-svc")?\} 1$/m);
  });
});
