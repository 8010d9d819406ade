// One worker thread of the render pool (render-pool.ts): renders the jobs the pool posts, one at a time, with the
// sandboxed renderer and its cache of parsed templates. Whatever a template does here, it holds this thread only;
// the pool terminates the thread when a render outlives its deadline.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { RenderReply, RenderRequest } from './render-protocol.ts';
import { createRenderer, type RendererOptions, TemplateRenderError } from './renderer.ts';

const port = parentPort;
if (!port) throw new Error('render-worker.ts runs as a worker thread of the render pool, not on its own');

/** How much lower than the service's own thread a render thread runs: health checks, SMTP, NATS and gRPC come first. */
const nicenessAboveService = 10;

/**
 * Lowers this thread's CPU priority, not the process's: on Linux a thread has its own niceness, set through its
 * thread id (/proc/thread-self names it), and raising niceness needs no privilege. Elsewhere, or if refused, renders
 * keep the service's priority; they are still bounded by their deadline.
 */
function yieldCpuToService(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, Math.min(19, getPriority(threadId) + nicenessAboveService));
  } catch {
    // not Linux, or not permitted
  }
}

yieldCpuToService();
const renderer = createRenderer(workerData as RendererOptions);

port.on('message', (request: RenderRequest) => {
  if (request.kind === 'check') {
    void renderer.checkSyntax(request.texts).then((problems) => port.postMessage({ kind: 'checked', id: request.id, problems } satisfies RenderReply));
    return;
  }
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
