// The panel's two static files (its stylesheet and the script that follows a message live), read once at start and
// served under a URL that names their content hash, so browsers may cache them for good and never see a stale one.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PanelContext } from './context.ts';

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly version: string;
}

const files = { 'panel.css': 'text/css; charset=utf-8', 'live.js': 'text/javascript; charset=utf-8' } as const;
export type AssetName = keyof typeof files;

const assets = new Map<string, Asset>(
  Object.entries(files).map(([name, type]) => {
    const body = readFileSync(new URL(`./static/${name}`, import.meta.url));
    return [name, { body, type, version: createHash('sha256').update(body).digest('hex').slice(0, 12) }];
  }),
);

export function assetUrl(name: AssetName): string {
  return `/panel/static/${name}?v=${assets.get(name)?.version ?? ''}`;
}

/** GET /panel/static/:file; false when there is no such file. */
export function serveAsset(ctx: PanelContext, name: string): boolean {
  const asset = assets.get(name);
  if (!asset) return false;
  ctx.type = asset.type;
  ctx.body = asset.body;
  // Only the current content's URL is cacheable forever; an old or bare URL is revalidated.
  ctx.set('Cache-Control', ctx.query.v === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache');
  return true;
}
