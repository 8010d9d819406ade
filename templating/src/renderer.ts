// Renders a job's template snapshot with LiquidJS. Templates are written by tenants, so rendering is sandboxed: no file
// access (include/render/layout only see an empty in-memory map), own properties only, and parse/render/memory limits.
// HTML output is escaped by default; subject and text are plain text, so escaping them would show `&amp;` to readers.
// LiquidJS checks its render limit between template nodes, synchronously: a hostile template holds the thread it runs
// on for the whole limit. So this renderer runs only inside the worker threads of render-pool.ts, which services use.
import { Liquid, type Template } from 'liquidjs';
import { LruCache } from './template-cache.ts';

export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

export type Part = keyof RenderedMail;

export interface RendererOptions {
  /** Longest template source parsed, in characters. */
  parseLimit: number;
  /** Longest time one part may take to render, in ms. */
  renderLimit: number;
  /** LiquidJS allocation budget per render (string and array building). */
  memoryLimit: number;
  /** Parsed templates kept, per part. */
  cacheEntries: number;
}

export const defaultRendererOptions: RendererOptions = {
  parseLimit: 1_000_000,
  renderLimit: 2_000,
  memoryLimit: 20_000_000,
  cacheEntries: 1_000,
};

/** Thrown when a template cannot be parsed or rendered with the message's data; retrying cannot help. */
export class TemplateRenderError extends Error {
  override name = 'TemplateRenderError';
  /** The part at fault; undefined when the render as a whole was stopped (render-pool.ts: its deadline, its worker lost). */
  readonly part: Part | undefined;
  constructor(part: Part | undefined, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.part = part;
  }
}

interface CachedTemplate {
  source: string;
  parsed: Template[];
}

/** What is rendered: a template version of a project (the delivery job's snapshot) with a message's data. */
export interface TemplateSource {
  readonly projectId: number;
  readonly template: { readonly slug: string; readonly version: number; readonly subject: string; readonly html: string; readonly text: string };
  readonly data: Record<string, unknown>;
  /**
   * A test render (POST /api/v1/templates/render): a variable the data lacks is an error naming it with its line and
   * column, rather than the empty text a send renders. Conditions stay lenient: `{% if coupon %}` tests for it.
   */
  readonly strictVariables?: boolean;
}

/** A template's texts, as saved. */
export type TemplateTexts = Pick<TemplateSource['template'], Part>;

/** What the parser says of each text that does not parse (with line and column); empty when all three do. */
export type SyntaxProblems = Partial<Record<Part, string>>;

export interface Renderer {
  render(source: TemplateSource): Promise<RenderedMail>;
  /** Parses the texts without rendering them: a template's check when it is saved. */
  checkSyntax(texts: TemplateTexts): Promise<SyntaxProblems>;
}

/** Removes line breaks (and other control characters) so data can never end the Subject header and start another. */
export function toHeaderText(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

export function createRenderer(overrides: Partial<RendererOptions> = {}): Renderer {
  const options = { ...defaultRendererOptions, ...overrides };
  const shared = {
    templates: {},
    ownPropertyOnly: true,
    timezoneOffset: 0,
    parseLimit: options.parseLimit,
    renderLimit: options.renderLimit,
    memoryLimit: options.memoryLimit,
  };
  const plain = new Liquid(shared);
  const html = new Liquid({ ...shared, outputEscape: 'escape' });
  const strict = { strictVariables: true, lenientIf: true };
  const strictPlain = new Liquid({ ...shared, ...strict });
  const strictHtml = new Liquid({ ...shared, ...strict, outputEscape: 'escape' });
  const cache = new LruCache<string, CachedTemplate>(options.cacheEntries * 3);

  const parse = (engine: Liquid, key: string, source: string): Template[] => {
    const cached = cache.get(key);
    // The source check keeps a stale entry from ever rendering, should a (slug, version) be reused with other content.
    if (cached && cached.source === source) return cached.parsed;
    const parsed = engine.parse(source);
    cache.set(key, { source, parsed });
    return parsed;
  };

  // Synchronous: the data is plain JSON and partials come from memory, so nothing a template reads is awaited, and
  // LiquidJS's async path only adds a promise per node (about half the render's CPU for a small template).
  const renderPart = (job: TemplateSource, part: Part): string => {
    const { slug, version } = job.template;
    const engine = job.strictVariables ? (part === 'html' ? strictHtml : strictPlain) : part === 'html' ? html : plain;
    try {
      // Slugs are unique per project only, so the project is part of the key; a test render parses with its own engine.
      const key = `${job.strictVariables ? 'strict:' : ''}${job.projectId}/${slug}@${version}/${part}`;
      const parsed = parse(engine, key, job.template[part]);
      return String(engine.renderSync(parsed, job.data));
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new TemplateRenderError(part, `template "${slug}" version ${version}: the ${part} could not be rendered: ${detail}`, { cause: error });
    }
  };

  return {
    async render(job) {
      return { subject: toHeaderText(renderPart(job, 'subject')), html: renderPart(job, 'html'), text: renderPart(job, 'text') };
    },
    async checkSyntax(texts) {
      const problems: SyntaxProblems = {};
      for (const part of ['subject', 'html', 'text'] as const) {
        try {
          (part === 'html' ? html : plain).parse(texts[part]);
        } catch (error) {
          problems[part] = error instanceof Error ? error.message : String(error);
        }
      }
      return problems;
    },
  };
}
