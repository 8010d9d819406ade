// docs/settings.md's settings table is the one generated from the services' config declarations (settings-table.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { integer, secret, text, url } from '@notify/platform';
import { cell, loadServiceSpecs, settingsDocPath, settingsTable, tableIn, withTable } from './settings-table.ts';

test('docs/settings.md holds the settings table generated from the config declarations (npm run docs:settings rewrites it)', async () => {
  const document = readFileSync(settingsDocPath, 'utf8');
  const current = tableIn(document);
  assert.ok(current, 'docs/settings.md has lost the settings table markers');
  assert.equal(current, settingsTable(await loadServiceSpecs()), 'docs/settings.md: the settings table is stale; run npm run docs:settings');
});

test('every variable a service declares has a row naming that service', async () => {
  const services = await loadServiceSpecs();
  const table = settingsTable(services);
  for (const { service, spec } of services) {
    for (const field of Object.values(spec)) {
      const row = table.split('\n').find((line) => line.startsWith(`| \`${field.env}\``) && line.includes(cell(field.description)));
      assert.ok(row, `${service}: no row for ${field.env}`);
      assert.match(row, new RegExp(`\\| (all|[a-z-, ]*\\b${service}\\b[a-z-, ]*) \\|`), `${field.env}: ${row}`);
    }
  }
});

test('a variable declared alike by several services is one row; declared differently, one row per variant', () => {
  const port = (value: number) => integer('GRPC_PORT', { description: `port ${value}`, default: value });
  const shared = text('NATS_URL', { description: 'NATS servers', default: 'nats://127.0.0.1:4222', secret: true });
  const table = settingsTable(
    [
      { service: 'one', spec: { port: port(1), nats: shared, token: secret('TOKEN', { description: 'a | b' }) } },
      {
        service: 'two',
        spec: {
          port: port(2),
          nats: shared,
          database: url('DATABASE_URL', { description: 'rate <count>/<unit>, not `<html>`', default: '', protocols: ['postgres'] }),
        },
      },
    ],
    { level: text('LOG_LEVEL', { description: 'level', default: 'info' }) },
  );
  assert.deepEqual(table.split('\n').slice(1, -1), [
    '| variable | services | default | meaning |',
    '|---|---|---|---|',
    '| `LOG_LEVEL` | all | `info` | level |',
    '| `GRPC_PORT` | one | `1` | port 1 |',
    '| `GRPC_PORT` | two | `2` | port 2 |',
    '| `NATS_URL` or `NATS_URL_FILE` | all | `nats://127.0.0.1:4222` | NATS servers |',
    '| `TOKEN` or `TOKEN_FILE` | one | required | a \\| b |',
    '| `DATABASE_URL` | two | empty | rate &lt;count&gt;/&lt;unit&gt;, not `<html>` |',
  ]);
});

test('the table is replaced between its markers, and nothing else of the document changes', () => {
  const table = settingsTable([{ service: 'one', spec: { level: text('LOG_LEVEL', { description: 'level', default: 'info' }) } }], {});
  const document = `# Title\n\nBefore.\n\n${settingsTable([], {})}\n\nAfter.\n`;
  const updated = withTable(document, table);
  assert.equal(updated, `# Title\n\nBefore.\n\n${table}\n\nAfter.\n`);
  assert.equal(tableIn(updated), table);
  assert.throws(() => withTable('# No table\n', table), /no settings table markers/);
});
