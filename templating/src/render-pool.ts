// The one way services render tenant templates: in a pool of worker threads, never on their own event loop. LiquidJS
// enforces its render limit synchronously, so a template with nested loops holds whichever thread runs it for up to
// that limit; here that thread is a worker, and the service keeps answering health checks, delivering other mail and
// serving calls meanwhile. Render threads also run at a lower CPU priority than the service's own thread
// (render-worker.ts), so on a busy CPU the service's work comes first. Each render has a hard deadline (the render
// limit plus a margin): a worker still busy at the deadline is terminated and replaced, and the render rejects with a
// TemplateRenderError, as does one whose worker dies twice (out of memory). Parsing and the cache of parsed templates
// live in the workers.
import { Worker } from 'node:worker_threads';
import type { RenderReply, RenderRequest } from './render-protocol.ts';
import {
  defaultRendererOptions,
  type RenderedMail,
  type Renderer,
  type RendererOptions,
  type SyntaxProblems,
  TemplateRenderError,
  type TemplateSource,
  type TemplateTexts,
} from './renderer.ts';

/** Time a render may take beyond the render limit before its worker is terminated. */
export const deadlineMarginMs = 1_000;
/** Heap of one worker: a render that needs more ends its worker, not the process. */
export const defaultWorkerHeapMb = 128;
/** Pause before a worker that failed to start is started again. */
const restartDelayMs = 1_000;

const workerUrl = new URL('./render-worker.ts', import.meta.url);

export interface RenderPoolOptions {
  /** Worker threads; each renders one template at a time. */
  workers: number;
  /** Limits and cache of the renderer in each worker (defaultRendererOptions otherwise). */
  renderer?: Partial<RendererOptions>;
  /** Longest one render may hold its worker; default the render limit plus deadlineMarginMs. */
  deadlineMs?: number;
  /** Heap limit of each worker in MB; default defaultWorkerHeapMb. */
  maxHeapMb?: number;
  /** Time the workers have to start; default 30 s. */
  startTimeoutMs?: number;
  /** Told each time a worker is replaced, for the service's log. */
  onWorkerReplaced?: (event: WorkerReplaced) => void;
}

export interface WorkerReplaced {
  /** `deadline`: terminated because a render outlived it; `crashed`: the worker died (out of memory, a fault). */
  readonly reason: 'deadline' | 'crashed';
  /** The render that held the worker, as `template "<slug>" version <n>` (project `<id>`), if one did. */
  readonly template: string | undefined;
  readonly detail: string;
}

export interface RenderPool extends Renderer {
  /** Worker threads the pool keeps. */
  readonly size: number;
  /** Renders waiting or running reject (not as TemplateRenderError: the template is not at fault); workers end. */
  close(): Promise<void>;
}

interface Task {
  readonly request: RenderRequest;
  /** With the mail of a render, or the problems of a check. */
  readonly resolve: (result: RenderedMail | SyntaxProblems) => void;
  readonly reject: (error: Error) => void;
  /** Workers that died while rendering it. */
  crashes: number;
}

interface Slot {
  readonly worker: Worker;
  ready: boolean;
  /** Terminated, crashed or exited: it takes no more work and its events are ignored. */
  gone: boolean;
  task: Task | undefined;
  timer: NodeJS.Timeout | undefined;
}

const describe = (request: RenderRequest): string =>
  request.kind === 'render' ? `template "${request.source.template.slug}" version ${request.source.template.version}` : 'a template syntax check';

/** What a worker held, for the log: the template and its project. */
const owner = (request: RenderRequest): string =>
  request.kind === 'render' ? `${describe(request)} (project ${request.source.projectId})` : describe(request);

/** Only what a render reads, so the job's other fields (and anything that does not clone) never cross threads. */
function plainSource(source: TemplateSource): TemplateSource {
  const { slug, version, subject, html, text } = source.template;
  const strict = source.strictVariables ? { strictVariables: true } : {};
  return { projectId: source.projectId, template: { slug, version, subject, html, text }, data: source.data, ...strict };
}

class WorkerPool implements RenderPool {
  readonly size: number;
  readonly #rendererOptions: RendererOptions;
  readonly #deadlineMs: number;
  readonly #maxHeapMb: number;
  readonly #onWorkerReplaced: (event: WorkerReplaced) => void;
  readonly #slots = new Set<Slot>();
  readonly #queue: Task[] = [];
  readonly #restarts = new Set<NodeJS.Timeout>();
  #nextId = 1;
  #closed = false;
  /** Settles the start: every first worker ready, or the first of them lost. */
  #starting: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(options: RenderPoolOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new RangeError('a render pool needs at least one worker');
    this.size = options.workers;
    this.#rendererOptions = { ...defaultRendererOptions, ...options.renderer };
    this.#deadlineMs = options.deadlineMs ?? this.#rendererOptions.renderLimit + deadlineMarginMs;
    this.#maxHeapMb = options.maxHeapMb ?? defaultWorkerHeapMb;
    this.#onWorkerReplaced = options.onWorkerReplaced ?? (() => {});
  }

  start(timeoutMs: number): Promise<void> {
    const started = new Promise<void>((resolve, reject) => (this.#starting = { resolve, reject }));
    for (let index = 0; index < this.size; index += 1) this.#spawn();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`render workers did not start within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([started, timeout]).finally(() => {
      clearTimeout(timer);
      this.#starting = undefined;
    });
  }

  render(source: TemplateSource): Promise<RenderedMail> {
    return this.#submit({ id: this.#nextId++, kind: 'render', source: plainSource(source) });
  }

  /** Parsing too runs in a worker: a huge or pathological template holds a worker, never the service's thread. */
  checkSyntax(texts: TemplateTexts): Promise<SyntaxProblems> {
    const { subject, html, text } = texts;
    return this.#submit({ id: this.#nextId++, kind: 'check', texts: { subject, html, text } });
  }

  /** `T`: what the request's reply carries (a render's mail, a check's problems). */
  #submit<T extends RenderedMail | SyntaxProblems>(request: RenderRequest): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the render pool is closed'));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ request, resolve: resolve as (result: RenderedMail | SyntaxProblems) => void, reject, crashes: 0 });
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#restarts) clearTimeout(timer);
    const closed = new Error('the render pool is closed');
    for (const task of this.#queue.splice(0)) task.reject(closed);
    const ending: Promise<number>[] = [];
    for (const slot of this.#slots) {
      const task = this.#retire(slot);
      task?.reject(closed);
      ending.push(slot.worker.terminate());
    }
    await Promise.all(ending);
  }

  #spawn(): void {
    const worker = new Worker(workerUrl, {
      workerData: this.#rendererOptions,
      // Not the service's flags: `--import` of the telemetry, a test runner's options, profiling.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: this.#maxHeapMb },
      name: 'template renderer',
    });
    // An idle pool never keeps a process alive; a render in flight does, through its deadline timer.
    worker.unref();
    const slot: Slot = { worker, ready: false, gone: false, task: undefined, timer: undefined };
    this.#slots.add(slot);
    worker.on('message', (reply: RenderReply) => this.#onReply(slot, reply));
    worker.on('error', (error) => this.#onLost(slot, error.message));
    worker.on('exit', (code) => this.#onLost(slot, `exited with code ${code}`));
  }

  /** Takes `slot` out of the pool; returns the task it held. */
  #retire(slot: Slot): Task | undefined {
    slot.gone = true;
    this.#slots.delete(slot);
    clearTimeout(slot.timer);
    const task = slot.task;
    slot.task = undefined;
    return task;
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      if (!slot.ready || slot.gone || slot.task) continue;
      const task = this.#queue.shift() as Task;
      slot.task = task;
      // The deadline runs from when a worker takes the render: time waiting in the queue is not the template's.
      slot.timer = setTimeout(() => this.#expire(slot, task), this.#deadlineMs);
      try {
        slot.worker.postMessage(task.request);
      } catch (error) {
        // Data that cannot cross threads (never JSON's): this render fails, the worker stays free for the next.
        clearTimeout(slot.timer);
        slot.task = undefined;
        task.reject(new Error(`${describe(task.request)}: its data cannot be handed to a render worker: ${(error as Error).message}`));
      }
    }
  }

  #onReply(slot: Slot, reply: RenderReply): void {
    if (slot.gone) return;
    if (reply.kind === 'ready') {
      slot.ready = true;
      if (this.#starting && [...this.#slots].every((each) => each.ready)) this.#starting.resolve();
      this.#dispatch();
      return;
    }
    const task = slot.task;
    if (!task || task.request.id !== reply.id) return;
    clearTimeout(slot.timer);
    slot.task = undefined;
    if (reply.kind === 'rendered') task.resolve(reply.mail);
    else if (reply.kind === 'checked') task.resolve(reply.problems);
    else if (reply.template) task.reject(new TemplateRenderError(reply.part, reply.message));
    else task.reject(new Error(`${describe(task.request)}: the renderer failed: ${reply.message}`));
    this.#dispatch();
  }

  #expire(slot: Slot, task: Task): void {
    if (slot.gone || slot.task !== task) return;
    this.#retire(slot);
    void slot.worker.terminate();
    this.#onWorkerReplaced({ reason: 'deadline', template: owner(task.request), detail: `still rendering after ${this.#deadlineMs} ms; worker terminated` });
    task.reject(
      new TemplateRenderError(
        undefined,
        `${describe(task.request)}: rendering was stopped after ${this.#deadlineMs} ms (render limit ${this.#rendererOptions.renderLimit} ms)`,
      ),
    );
    this.#spawn();
    this.#dispatch();
  }

  #onLost(slot: Slot, detail: string): void {
    if (slot.gone) return;
    const wasReady = slot.ready;
    const task = this.#retire(slot);
    if (this.#closed) return;
    if (this.#starting) {
      this.#starting.reject(new Error(`a render worker did not start: ${detail}`));
      return;
    }
    this.#onWorkerReplaced({ reason: 'crashed', template: task ? owner(task.request) : undefined, detail });
    if (task) {
      task.crashes += 1;
      // Once may be the worker's own state (its cache filling its heap); twice on fresh workers is the template.
      if (task.crashes >= 2) task.reject(new TemplateRenderError(undefined, `${describe(task.request)}: rendering ended its worker twice (${detail})`));
      else this.#queue.unshift(task);
    }
    if (wasReady) this.#spawn();
    else this.#restartLater(detail);
    this.#dispatch();
  }

  /** A replacement that could not start is tried again shortly; meanwhile, with no worker left, renders fail over. */
  #restartLater(detail: string): void {
    if (![...this.#slots].some((slot) => slot.ready)) {
      const unavailable = new Error(`no render worker is running: ${detail}`);
      for (const task of this.#queue.splice(0)) task.reject(unavailable);
    }
    const timer = setTimeout(() => {
      this.#restarts.delete(timer);
      if (!this.#closed) this.#spawn();
    }, restartDelayMs);
    timer.unref();
    this.#restarts.add(timer);
  }
}

/** Starts `options.workers` render workers and resolves once every one is ready (rejects if one cannot start). */
export async function startRenderPool(options: RenderPoolOptions): Promise<RenderPool> {
  const pool = new WorkerPool(options);
  try {
    await pool.start(options.startTimeoutMs ?? 30_000);
  } catch (error) {
    await pool.close();
    throw error;
  }
  return pool;
}
