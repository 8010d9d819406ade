// GET /docs: the public API's documentation for people, Swagger UI rendering /api/v1/openapi.json. Its files come from
// the swagger-ui-dist package and are served by the gateway itself (no CDN): read once, and served under URLs that name
// their content hash, so browsers may cache them for good and never run a stale one.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { RouterMiddleware } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import { ApiError } from '../errors/api-error.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import { openApiPath } from './route.ts';

const docsPath = '/docs';

const compress = promisify(gzip);
const resolvePackageFile = createRequire(import.meta.url).resolve;

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly version: string;
  /** The gzip encoding, made on the first request that accepts it (the bundle shrinks from 1.7 MB to a third). */
  gzipped?: Promise<Buffer>;
}

const javascript = 'text/javascript; charset=utf-8';
const css = 'text/css; charset=utf-8';

/** Everything the page loads; any other name under /docs/ is a 404. */
const sources: Record<string, { readonly file: string | URL; readonly type: string }> = {
  'swagger-ui.css': { file: resolvePackageFile('swagger-ui-dist/swagger-ui.css'), type: css },
  'swagger-ui-bundle.js': { file: resolvePackageFile('swagger-ui-dist/swagger-ui-bundle.js'), type: javascript },
  'docs.js': { file: new URL('./static/docs.js', import.meta.url), type: javascript },
};

/**
 * Scripts and styles from the gateway only, nothing inline and no eval; Swagger UI's icons are data: images; it fetches
 * the document (and, on "Try it out", the API) from the same origin. No framing, no forms, no base rewriting.
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const securityHeaders = {
  'Content-Security-Policy': contentSecurityPolicy,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

function loadAssets(): Map<string, Asset> {
  return new Map(
    Object.entries(sources).map(([name, { file, type }]) => {
      const body = readFileSync(file);
      return [name, { body, type, version: createHash('sha256').update(body).digest('hex').slice(0, 12) }];
    }),
  );
}

function page(assets: ReadonlyMap<string, Asset>): string {
  const url = (name: string): string => `${docsPath}/${name}?v=${assets.get(name)?.version ?? ''}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Notify API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${url('swagger-ui.css')}">
<script defer src="${url('swagger-ui-bundle.js')}"></script>
<script defer src="${url('docs.js')}"></script>
</head>
<body>
<div id="swagger-ui" data-openapi-url="${openApiPath}"></div>
</body>
</html>
`;
}

async function sendAsset(ctx: ParameterizedContext<GatewayState>, asset: Asset): Promise<void> {
  ctx.set(securityHeaders);
  ctx.type = asset.type;
  // Only the current content's URL may be cached for good; an old or bare URL is revalidated.
  ctx.set('Cache-Control', ctx.query.v === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache');
  ctx.vary('Accept-Encoding');
  if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    asset.gzipped ??= compress(asset.body, { level: 9 });
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = await asset.gzipped;
  } else {
    ctx.body = asset.body;
  }
}

export interface DocsRoutes {
  /** GET /docs: the HTML page. */
  readonly page: Middleware<GatewayState>;
  /** GET /docs/: the same page's canonical address. */
  readonly redirect: Middleware<GatewayState>;
  /** GET /docs/:file: the page's scripts and stylesheet. */
  readonly asset: RouterMiddleware<GatewayState>;
}

export function docsRoutes(): DocsRoutes {
  const assets = loadAssets();
  const html = page(assets);
  return {
    page(ctx) {
      ctx.set(securityHeaders);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = html;
    },
    redirect(ctx) {
      ctx.redirect(docsPath);
      ctx.status = 301;
    },
    async asset(ctx) {
      const name = ctx.params.file ?? '';
      const asset = Object.hasOwn(sources, name) ? assets.get(name) : undefined;
      if (!asset) throw new ApiError(404, 'not_found', text('not_found'));
      await sendAsset(ctx, asset);
    },
  };
}
