// Response headers of every panel page: a strict Content-Security-Policy (scripts and styles only from the panel's own
// files, nothing inline), no framing by anyone, no MIME sniffing, no referrer outside the panel.
import type { ParameterizedContext } from 'koa';

const pagePolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  // The template preview's HTML part is shown in a sandboxed frame served by the panel itself.
  "frame-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * The rendered HTML of a tenant's template, shown inside the preview frame: a sandboxed document (unique origin, no
 * scripts, no forms), which may use inline styles (mail HTML does) but load nothing from anywhere.
 */
const previewPolicy = [
  'sandbox',
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  "frame-ancestors 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const common = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

export function setPageHeaders(ctx: ParameterizedContext): void {
  ctx.set({ ...common, 'Content-Security-Policy': pagePolicy, 'X-Frame-Options': 'DENY' });
}

export function setPreviewHeaders(ctx: ParameterizedContext): void {
  ctx.set({ ...common, 'Content-Security-Policy': previewPolicy, 'X-Frame-Options': 'SAMEORIGIN' });
}
