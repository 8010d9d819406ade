// Reading a panel form post (application/x-www-form-urlencoded): small, bounded, refused with an error page otherwise.
import { type PanelContext, PanelError } from './context.ts';

/** A sign-in or a button press; nothing the panel posts comes near this. */
const maxFormBytes = 16_384;

export async function readForm(ctx: PanelContext): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new PanelError(415, 'error.badRequest', 'error.badRequestText');
  const declared = Number(ctx.get('Content-Length') || 0);
  if (declared > maxFormBytes) throw new PanelError(413, 'error.badRequest', 'error.badRequestText');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxFormBytes) throw new PanelError(413, 'error.badRequest', 'error.badRequestText');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
