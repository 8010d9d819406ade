import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CpuProfile, locationOf, packageOf, summarizeProfiles } from './profile-summary.ts';

const root = '/repo/';

test('functions are attributed to their package or repository folder', () => {
  assert.equal(packageOf('file:///repo/node_modules/@grpc/grpc-js/build/src/client.js', root), '@grpc/grpc-js');
  assert.equal(packageOf('file:///repo/node_modules/pg/lib/client.js', root), 'pg');
  assert.equal(packageOf('file:///repo/gateway/src/send/route.ts', root), 'gateway');
  assert.equal(packageOf('node:internal/streams/readable', root), 'node (internal)');
  assert.equal(packageOf('', root), '(native / V8)');
  assert.equal(locationOf('file:///repo/node_modules/pg/lib/client.js', 9, root), 'pg/lib/client.js:10');
  assert.equal(locationOf('file:///repo/gateway/src/app.ts', 0, root), 'gateway/src/app.ts:1');
});

// Samples every 1 ms from t=1000 µs: hot x3 (pg), idle x2, gc x1, route x1 (gateway).
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
    { id: 2, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
    { id: 3, callFrame: { functionName: 'hot', url: 'file:///repo/node_modules/pg/lib/client.js', lineNumber: 4 } },
    { id: 4, callFrame: { functionName: '(garbage collector)', url: '', lineNumber: -1 } },
    { id: 5, callFrame: { functionName: 'route', url: 'file:///repo/gateway/src/route.ts', lineNumber: 0 } },
  ],
  startTime: 0,
  endTime: 8_000,
  samples: [3, 3, 2, 4, 3, 2, 5],
  timeDeltas: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
};

test('self time is ranked over busy time, with idle left out and GC reported apart', () => {
  const summary = summarizeProfiles('gateway', [profile], { repoRoot: root });
  assert.equal(summary.sampledMs, 7);
  assert.equal(summary.busyMs, 5);
  assert.equal(summary.gcShare, 1 / 5);
  assert.deepEqual(summary.functions[0], { name: 'hot pg/lib/client.js:5', selfMs: 3, share: 3 / 5 });
  assert.deepEqual(
    summary.packages.map((line) => line.name),
    ['pg', '(garbage collector)', 'gateway'],
  );
});

test('only samples inside the windows count', () => {
  const summary = summarizeProfiles('gateway', [profile], { repoRoot: root, windows: [{ label: 'ingest', startUs: 4_000, endUs: 6_000 }] });
  // Samples at 4000 (gc) and 5000 (hot).
  assert.equal(summary.sampledMs, 2);
  assert.equal(summary.busyMs, 2);
  assert.deepEqual(
    summary.functions.map((line) => line.name),
    ['(garbage collector)', 'hot pg/lib/client.js:5'],
  );
});

test("self time is also charged to whoever asked for it: the nearest frame with a file above Node's and V8's", () => {
  // (root) > route (ours) > write (node:) > writev (native); (root) > query (pg) > write (node:); (root) > runMicrotasks
  // (native, nothing above); (root) > (garbage collector). One sample each, 1 ms apart, the write of route twice.
  const asked: CpuProfile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2, 5, 7, 8] },
      { id: 2, callFrame: { functionName: 'route', url: 'file:///repo/gateway/src/route.ts', lineNumber: 0 }, children: [3] },
      { id: 3, callFrame: { functionName: 'write', url: 'node:net', lineNumber: 10 }, children: [4] },
      { id: 4, callFrame: { functionName: 'writev', url: '', lineNumber: -1 } },
      { id: 5, callFrame: { functionName: 'query', url: 'file:///repo/node_modules/pg/lib/client.js', lineNumber: 4 }, children: [6] },
      { id: 6, callFrame: { functionName: 'write', url: 'node:net', lineNumber: 10 } },
      { id: 7, callFrame: { functionName: 'runMicrotasks', url: '', lineNumber: -1 } },
      { id: 8, callFrame: { functionName: '(garbage collector)', url: '', lineNumber: -1 } },
    ],
    startTime: 0,
    endTime: 5_000,
    samples: [4, 4, 6, 7, 8],
    timeDeltas: [0, 1_000, 1_000, 1_000, 1_000],
  };
  const summary = summarizeProfiles('gateway', [asked], { repoRoot: root });
  assert.deepEqual(
    summary.askers.map((line) => [line.name, line.selfMs]),
    [
      ['gateway', 2],
      ['pg', 1],
      ['node (no package above)', 1],
      ['(garbage collector)', 1],
    ],
  );
  assert.deepEqual(summary.split, { ours: 2 / 5, dependencies: 1 / 5, node: 1 / 5, vm: 1 / 5 });
  // By package the same time is Node's and V8's own, where it ran.
  assert.equal(
    summary.packages.find((line) => line.name === 'gateway'),
    undefined,
  );
});
