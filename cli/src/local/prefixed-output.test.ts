import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { PrefixedOutput } from './prefixed-output.ts';

function target(isTTY: boolean): { written: string[]; write(text: string): void; isTTY: boolean } {
  const written: string[] = [];
  return { written, write: (text) => void written.push(text), isTTY };
}

describe('prefixed output', () => {
  test('each line is prefixed with the padded source name', () => {
    const sink = target(false);
    const output = new PrefixedOutput({ target: sink, width: 12 });
    output.line('gateway', '{"msg":"started"}');
    output.line('mailer-svc-1', 'ready');
    assert.deepEqual(sink.written, ['gateway      | {"msg":"started"}\n', 'mailer-svc-1 | ready\n']);
  });

  test('names are coloured only when the target is a terminal', () => {
    const tty = target(true);
    new PrefixedOutput({ target: tty, width: 8 }).line('auth-svc', 'x');
    assert.match(tty.written[0] ?? '', /^\u001b\[\d+mauth-svc\u001b\[0m \| x\n$/);
  });

  test('a piped stream is split into lines across chunks, and a last partial line is flushed at its end', async () => {
    const sink = target(false);
    const output = new PrefixedOutput({ target: sink, width: 4 });
    const stream = new PassThrough();
    output.pipe('svc', stream);
    stream.write('first li');
    stream.write('ne\r\nsecond\nthi');
    stream.end('rd');
    await new Promise((resolve) => stream.on('end', resolve));
    assert.deepEqual(sink.written, ['svc  | first line\n', 'svc  | second\n', 'svc  | third\n']);
  });

  test('lines are kept without a target, bounded, and can be read per source', () => {
    const output = new PrefixedOutput({ target: null, width: 3, keep: 3 });
    for (const [source, text] of [
      ['a', '1'],
      ['b', '2'],
      ['a', '3'],
      ['b', '4'],
    ] as const)
      output.line(source, text);
    assert.deepEqual(
      output.lines().map((line) => line.text),
      ['2', '3', '4'],
    );
    assert.deepEqual(
      output.lines('a').map((line) => line.text),
      ['3'],
    );
    assert.equal(output.text('b'), 'b   | 2\nb   | 4\n');
  });

  test('however many lines come, the last `keep` of them are what is read, in order', () => {
    const output = new PrefixedOutput({ target: null, width: 3, keep: 3 });
    for (let index = 1; index <= 20; index += 1) {
      output.line(index % 2 === 0 ? 'b' : 'a', String(index));
      const expected = Array.from({ length: Math.min(3, index) }, (_, offset) => String(index - Math.min(3, index) + 1 + offset));
      assert.deepEqual(
        output.lines().map((line) => line.text),
        expected,
        `after ${index} lines`,
      );
    }
    assert.deepEqual(
      output.lines('a').map((line) => line.text),
      ['19'],
    );
  });
});
