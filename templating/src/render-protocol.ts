// The messages between the render pool (render-pool.ts) and its worker threads (render-worker.ts).
import type { Part, RenderedMail, TemplateSource } from './renderer.ts';

/** Pool → worker: one render; a worker is given the next only after it answered this one. */
export interface RenderRequest {
  readonly id: number;
  readonly source: TemplateSource;
}

/** Worker → pool: started (its modules loaded, its renderer built), or the answer to one request. */
export type RenderReply =
  | { readonly kind: 'ready' }
  | { readonly kind: 'rendered'; readonly id: number; readonly mail: RenderedMail }
  | {
      readonly kind: 'failed';
      readonly id: number;
      readonly part: Part | undefined;
      readonly message: string;
      /** A TemplateRenderError (the template's fault) rather than a fault of the renderer. */
      readonly template: boolean;
    };
