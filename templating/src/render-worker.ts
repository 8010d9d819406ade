// One worker thread of the render pool (render-pool.ts): renders the jobs the pool posts, one at a time, with the
// sandboxed renderer and its cache of parsed templates. Whatever a template does here, it holds this thread only;
// the pool terminates the thread when a render outlives its deadline.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createRenderer, TemplateRenderError, type RendererOptions } from './renderer.ts';
import type { RenderReply, RenderRequest } from './render-protocol.ts';

const port = parentPort;
if (!port) throw new Error('render-worker.ts runs as a worker thread of the render pool, not on its own');

/** Niceness of a render thread: the service's own thread (health checks, SMTP, NATS, gRPC) comes first for the CPU. */
const renderNiceness = 10;

/**
 * Lowers this thread's priority, not the process's: on Linux a thread has its own niceness, set through its thread
 * id (/proc/thread-self names it). Raising niceness needs no privilege. Elsewhere, or if refused, renders keep the
 * service's priority; they are still bounded by their deadline.
 */
function yieldCpuToService(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, renderNiceness);
  } catch {
    // not Linux, or not permitted
  }
}

yieldCpuToService();
const renderer = createRenderer(workerData as RendererOptions);

port.on('message', (request: RenderRequest) => {
  renderer.render(request.source).then(
    (mail) => port.postMessage({ kind: 'rendered', id: request.id, mail } satisfies RenderReply),
    (error: unknown) => {
      const part = error instanceof TemplateRenderError ? error.part : undefined;
      const message = error instanceof Error ? error.message : String(error);
      port.postMessage({ kind: 'failed', id: request.id, part, message, template: error instanceof TemplateRenderError } satisfies RenderReply);
    },
  );
});

port.postMessage({ kind: 'ready' } satisfies RenderReply);
