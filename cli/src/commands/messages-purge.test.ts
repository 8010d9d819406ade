// notifyctl's retention commands as far as they go without a server: `org update --retention` and `messages purge`.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';

describe('notifyctl org update --retention', () => {
  test("sends days or hours as written, and default as ''", async () => {
    assert.deepEqual(await requestOf(['org', 'update', '--id', '7', '--retention', '90d']), { id: 7, messageRetention: '90d' });
    assert.deepEqual(await requestOf(['org', 'update', '--id', '7', '--retention', '36h']), { id: 7, messageRetention: '36h' });
    assert.deepEqual(await requestOf(['org', 'update', '--id', '7', '--retention', 'default']), { id: 7, messageRetention: '' });
  });

  test('refuses a retention the server would refuse, before connecting', async () => {
    for (const retention of ['2w', '90', '0d']) {
      const outcome = await notifyctl(['org', 'update', '--id', '7', '--retention', retention], { ADMIN_TOKEN: 'admin-token-present' });
      assert.equal(outcome.code, 2, retention);
      assert.match(outcome.stderr, new RegExp(`--retention must be .*, or default; got '${retention}'`));
    }
  });
});

describe('notifyctl messages purge', () => {
  test('takes no flags but --json and asks for ADMIN_TOKEN before connecting', async () => {
    assert.deepEqual(await requestOf(['messages', 'purge', '--json']), {});
    const outcome = await notifyctl(['messages', 'purge'], { GATEWAY_TOKEN: 'gateway-token-present' });
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /ADMIN_TOKEN is not set: the retention purge needs the admin token of dispatch-svc/);
    assert.match((await notifyctl(['messages', '--help'])).stdout, /notifyctl messages purge/);
  });
});
