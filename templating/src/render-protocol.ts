// The messages between the render pool (render-pool.ts) and its worker threads (render-worker.ts).
import type { Part, RenderedMail, SyntaxProblems, TemplateSource, TemplateTexts } from './renderer.ts';

/** Pool → worker: one render, or one syntax check; a worker is given the next only after it answered this one. */
export type RenderRequest =
  | { readonly id: number; readonly kind: 'render'; readonly source: TemplateSource }
  | { readonly id: number; readonly kind: 'check'; readonly texts: TemplateTexts };

/** Worker → pool: started (its modules loaded, its renderer built), or the answer to one request. */
export type RenderReply =
  | { readonly kind: 'ready' }
  | { readonly kind: 'rendered'; readonly id: number; readonly mail: RenderedMail }
  | { readonly kind: 'checked'; readonly id: number; readonly problems: SyntaxProblems }
  | {
      readonly kind: 'failed';
      readonly id: number;
      readonly part: Part | undefined;
      readonly message: string;
      /** A TemplateRenderError (the template's fault) rather than a fault of the renderer. */
      readonly template: boolean;
    };
