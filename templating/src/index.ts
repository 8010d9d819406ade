// Tenant-written templates, one way everywhere: mailer-svc renders mail with this, dispatch-svc checks a template's
// syntax when it is saved and renders previews and subjects for the panel with the very same sandbox and limits.
// Services render through the worker-thread pool (render-pool.ts), so no template can hold their event loop.
export { type RenderPool, type RenderPoolOptions, startRenderPool, type WorkerReplaced } from './render-pool.ts';
export {
  defaultRendererOptions,
  type RenderedMail,
  type Renderer,
  type RendererOptions,
  TemplateRenderError,
  type TemplateSource,
  toHeaderText,
} from './renderer.ts';
export { sampleData } from './sample-data.ts';
