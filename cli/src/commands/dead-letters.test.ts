import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';

describe('notifyctl dead-letters', () => {
  test("list pages through a project's failed messages", async () => {
    assert.deepEqual(await requestOf(['dead-letters', 'list', '--project', '4']), { projectId: 4, limit: 50, beforeId: 0 });
    assert.deepEqual(await requestOf(['dead-letters', 'list', '--project', '4', '--limit', '10', '--before', '99']), { projectId: 4, limit: 10, beforeId: 99 });
  });

  test('requeue takes comma-separated ids or --all', async () => {
    assert.deepEqual(await requestOf(['dead-letters', 'requeue', '--project', '4', '--id', '12, 15,12,18']), {
      projectId: 4,
      messageIds: [12, 15, 18],
      all: false,
    });
    assert.deepEqual(await requestOf(['dead-letters', 'requeue', '--project', '4', '--all']), { projectId: 4, messageIds: [], all: true });
  });

  test('requeue refuses neither or both of --id and --all, and ids that are not ids', async () => {
    const cases: [string[], RegExp][] = [
      [['dead-letters', 'requeue', '--project', '4'], /give --id N\[,N\.\.\.\] or --all/],
      [['dead-letters', 'requeue', '--project', '4', '--id', '3', '--all'], /give --id N\[,N\.\.\.\] or --all/],
      [['dead-letters', 'requeue', '--project', '4', '--id', '3,x'], /--id must be message ids separated by commas, such as 12,15,18, got '3,x'/],
      [['dead-letters', 'requeue', '--project', '4', '--id', '0'], /--id must be message ids/],
    ];
    for (const [argv, message] of cases) {
      const outcome = await notifyctl(argv, { ADMIN_TOKEN: 'admin-token-present' });
      assert.equal(outcome.code, 2, argv.join(' '));
      assert.match(outcome.stderr, message);
      assert.match(outcome.stderr, /Run 'notifyctl dead-letters requeue --help' for usage/);
    }
  });

  test('help shows the either/or usage and the admin token', async () => {
    const outcome = await notifyctl(['dead-letters', '--help']);
    assert.equal(outcome.code, 0);
    assert.match(outcome.stdout, /notifyctl dead-letters requeue --project ID \(--id N\[,N\.\.\.\] \| --all\) \[--json\]/);
    assert.match(outcome.stdout, /notifyctl dead-letters list --project ID/);
    assert.match(outcome.stdout, /ADMIN_TOKEN/);
    assert.match((await notifyctl(['help'])).stdout, /dead-letters/);
  });

  test('asks for ADMIN_TOKEN before connecting', async () => {
    const outcome = await notifyctl(['dead-letters', 'list', '--project', '1'], { GATEWAY_TOKEN: 'gateway-token-present' });
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /ADMIN_TOKEN is not set: dead letters need the admin token of dispatch-svc/);
  });
});
