import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { type RenderPool, type RenderPoolOptions, startRenderPool, type WorkerReplaced } from './render-pool.ts';
import { createRenderer, TemplateRenderError, type TemplateSource } from './renderer.ts';
import { template } from './testing/template.ts';

/** Two loops of 3,000 over data: about 9 million iterations, far past any render limit. */
const nestedLoops = '{% for a in items %}{% for b in items %}{{ a }}{% endfor %}{% endfor %}';
const items = Array.from({ length: 3_000 }, (_, index) => index);

const pools: RenderPool[] = [];
after(async () => {
  for (const pool of pools) await pool.close();
});

async function pool(options: Partial<RenderPoolOptions> = {}): Promise<{ pool: RenderPool; replaced: WorkerReplaced[] }> {
  const replaced: WorkerReplaced[] = [];
  const started = await startRenderPool({ workers: 1, ...options, onWorkerReplaced: (event) => replaced.push(event) });
  pools.push(started);
  return { pool: started, replaced };
}

/** Runs `work` while sampling how late a 5 ms timer fires on this thread: the longest the event loop was held. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let stallMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - 5);
    last = now;
  }, 5);
  try {
    const result = await work();
    return { result, stallMs };
  } finally {
    clearInterval(timer);
  }
}

describe('render pool', () => {
  it('renders exactly what the in-process renderer renders, errors included', async () => {
    const { pool: workers } = await pool({ workers: 2 });
    const local = createRenderer();
    const sources: TemplateSource[] = [
      { projectId: 1, template: template(), data: { name: '<script>alert("x")</script> & Co' } },
      { projectId: 1, template: template({ html: '<h1>{{ title }}</h1>{{ trusted | raw }}' }), data: { title: 'Hi', trusted: '<b>ok</b>', name: 'x' } },
      { projectId: 2, template: template({ subject: 'Re: {{ name }}' }), data: { name: 'Ana\r\nBcc: victim@example.com' } },
      {
        projectId: 3,
        template: template({ text: '{% for item in list %}{{ item.n | times: 2 }},{% endfor %}[{{ missing }}][{{ name.constructor }}]' }),
        data: { list: [{ n: 1 }, { n: 2.5 }], name: 'Ana' },
      },
      { projectId: 4, template: template({ text: "{{ 'now' | date: '%Y' | size }} {{ name | upcase | truncate: 4 }}" }), data: { name: 'ünïcode' } },
    ];
    for (const source of sources) assert.deepEqual(await workers.render(source), await local.render(source), JSON.stringify(source.template));
    const broken = { projectId: 1, template: template({ html: '{% if %}' }), data: {} };
    const [inWorker, inProcess] = await Promise.all([
      workers.render(broken).catch((error: unknown) => error),
      local.render(broken).catch((error: unknown) => error),
    ]);
    assert.ok(inWorker instanceof TemplateRenderError);
    assert.ok(inProcess instanceof TemplateRenderError);
    assert.equal(inWorker.part, 'html');
    assert.equal(inWorker.message, inProcess.message);
  });

  it('applies the limits it is given inside its workers', async () => {
    const { pool: workers } = await pool({ renderer: { parseLimit: 1_000, memoryLimit: 100_000 } });
    await assert.rejects(workers.render({ projectId: 1, template: template({ html: 'x'.repeat(2_000) }), data: {} }), TemplateRenderError);
    await assert.rejects(
      workers.render({ projectId: 1, template: template({ text: '{% for i in (1..100000000) %}{{ i }}{% endfor %}' }), data: {} }),
      /memory alloc limit exceeded/,
    );
    await assert.rejects(workers.render({ projectId: 1, template: template({ text: "{% render 'package.json' %}" }), data: {} }), TemplateRenderError);
  });

  it('a template running to its render limit holds a worker, not the event loop of the caller', async () => {
    const { pool: workers } = await pool({ workers: 2, renderer: { renderLimit: 1_500 } });
    const { result, stallMs } = await longestStall(async () => {
      const hostile = workers.render({ projectId: 1, template: template({ text: nestedLoops }), data: { items } }).catch((error: unknown) => error);
      // Meanwhile the other worker keeps rendering, promptly.
      const started = performance.now();
      for (let index = 0; index < 20; index += 1)
        assert.equal((await workers.render({ projectId: 1, template: template(), data: { name: `n${index}` } })).text, `Hello n${index}`);
      const othersMs = performance.now() - started;
      return { error: await hostile, othersMs };
    });
    assert.ok(result.error instanceof TemplateRenderError, String(result.error));
    assert.match(result.error.message, /render limit exceeded/);
    // Rendered in the same process, the loops would hold everything for the whole 1.5 s limit.
    assert.ok(result.othersMs < 750, `20 other renders took ${result.othersMs} ms`);
    assert.ok(stallMs < 250, `the event loop was held for ${stallMs} ms`);
  });

  it("checks a saved template's syntax in a worker, as the in-process renderer would, without holding the caller", async () => {
    // A deadline far away: a loaded machine may take more than the default's 3 s over the huge parse below.
    const { pool: workers } = await pool({ deadlineMs: 30_000 });
    const texts = { subject: 'Hi {{ name }}', html: '<p>\n{% if %}</p>', text: 'fine {{ name | upcase }}' };
    const problems = await workers.checkSyntax(texts);
    assert.deepEqual(problems, await createRenderer().checkSyntax(texts));
    assert.deepEqual(Object.keys(problems), ['html']);
    assert.match(problems.html ?? '', /line:2, col:\d+/);
    // About a second of parsing: on the caller's thread it would hold every call and health check meanwhile.
    const huge = `${'{% if a %}{{ b | upcase }}{% endif %}'.repeat(10_000)}{% endfor %}`;
    const { result, stallMs } = await longestStall(() => workers.checkSyntax({ subject: 'Hi', html: huge, text: '' }));
    assert.match(result.html ?? '', /endfor/);
    assert.ok(stallMs < 250, `the event loop was held for ${stallMs} ms`);
    // A parse past the pool's deadline ends its worker like a render does.
    const { pool: hurried } = await pool({ deadlineMs: 50 });
    const stopped = await hurried.checkSyntax({ subject: 'Hi', html: huge, text: '' }).catch((error: unknown) => error);
    assert.ok(stopped instanceof TemplateRenderError, String(stopped));
    assert.match(stopped.message, /a template syntax check: rendering was stopped after 50 ms/);
  });

  it('terminates a worker still rendering at the deadline, rejects with TemplateRenderError and keeps serving', async () => {
    // A render limit far away: only the pool's deadline can stop this render.
    const { pool: workers, replaced } = await pool({ renderer: { renderLimit: 60_000 }, deadlineMs: 300 });
    const { result, stallMs } = await longestStall(async () => {
      const started = performance.now();
      const hostile = workers.render({ projectId: 7, template: template({ text: nestedLoops }), data: { items } }).catch((error: unknown) => error);
      // Queued behind the runaway render on the only worker: time spent waiting does not count against its deadline.
      const queued = workers.render({ projectId: 7, template: template(), data: { name: 'next' } });
      const error = await hostile;
      const stoppedAfterMs = performance.now() - started;
      return { error, stoppedAfterMs, queued: await queued };
    });
    assert.ok(result.error instanceof TemplateRenderError, String(result.error));
    assert.equal(result.error.part, undefined);
    assert.match(result.error.message, /^template "welcome" version 1: rendering was stopped after 300 ms/);
    assert.ok(result.stoppedAfterMs < 1_000, `stopped after ${result.stoppedAfterMs} ms`);
    assert.equal(result.queued.text, 'Hello next');
    assert.deepEqual(
      replaced.map((event) => [event.reason, event.template]),
      [['deadline', 'template "welcome" version 1 (project 7)']],
    );
    assert.ok(stallMs < 250, `the event loop was held for ${stallMs} ms`);
    // The replacement renders as before, repeatedly.
    for (let index = 0; index < 5; index += 1)
      assert.equal((await workers.render({ projectId: 7, template: template(), data: { name: 'again' } })).subject, 'Hello again');
  });

  it("a render that exhausts its worker twice is the template's fault; the pool carries on", async () => {
    // No LiquidJS memory limit and a small heap: the worker itself runs out of memory.
    const { pool: workers, replaced } = await pool({
      renderer: { memoryLimit: Number.MAX_SAFE_INTEGER, renderLimit: 60_000 },
      maxHeapMb: 32,
      deadlineMs: 30_000,
    });
    const growing =
      "{% assign s = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' %}{% for i in (1..100000000) %}{% assign s = s | append: i %}{% endfor %}{{ s | size }}";
    const error = await workers.render({ projectId: 1, template: template({ text: growing }), data: {} }).catch((caught: unknown) => caught);
    assert.ok(error instanceof TemplateRenderError, String(error));
    assert.match(error.message, /rendering ended its worker twice/);
    assert.deepEqual(
      replaced.map((event) => event.reason),
      ['crashed', 'crashed'],
    );
    assert.equal((await workers.render({ projectId: 1, template: template(), data: { name: 'after' } })).text, 'Hello after');
  });

  it("close rejects what waits or runs, not as the template's fault, and refuses later renders", async () => {
    const { pool: workers } = await pool({ renderer: { renderLimit: 60_000 } });
    const running = workers.render({ projectId: 1, template: template({ text: nestedLoops }), data: { items } }).catch((error: unknown) => error);
    const waiting = workers.render({ projectId: 1, template: template(), data: {} }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await workers.close();
    for (const error of [await running, await waiting]) {
      assert.ok(error instanceof Error);
      assert.ok(!(error instanceof TemplateRenderError));
      assert.match(error.message, /closed/);
    }
    await assert.rejects(workers.render({ projectId: 1, template: template(), data: {} }), /closed/);
    await workers.close();
  });

  it('a render whose data cannot cross threads fails alone; the worker stays free', async () => {
    const { pool: workers } = await pool();
    await assert.rejects(workers.render({ projectId: 1, template: template(), data: { name: () => 'a function' } }), /cannot be handed to a render worker/);
    assert.equal((await workers.render({ projectId: 1, template: template(), data: { name: 'next' } })).text, 'Hello next');
  });

  it('its threads yield the CPU to the service: a niceness 10 above its own, for render threads only (Linux)', {
    skip: !existsSync('/proc/thread-self'),
  }, async () => {
    await pool({ workers: 2 });
    const threads = readdirSync(`/proc/${process.pid}/task`).map((id) => {
      const stat = readFileSync(`/proc/${process.pid}/task/${id}/stat`, 'utf8');
      // Fields after the command name; niceness is field 19 of the line.
      const niceness = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      return { name: readFileSync(`/proc/${process.pid}/task/${id}/comm`, 'utf8').trim(), niceness };
    });
    const renderers = threads.filter((thread) => thread.name.startsWith('template render'));
    assert.ok(renderers.length >= 2, JSON.stringify(threads));
    const own = threads.find((thread) => thread.name === 'MainThread')?.niceness ?? 0;
    assert.ok(
      renderers.every((thread) => thread.niceness === Math.min(19, own + 10)),
      JSON.stringify(threads),
    );
  });

  it('refuses a pool without workers', async () => {
    await assert.rejects(startRenderPool({ workers: 0 }), RangeError);
  });
});
