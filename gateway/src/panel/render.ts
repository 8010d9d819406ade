// Answering a panel request with a page in the frame (layout.ts), from what the request's state knows.
import type { PanelContext } from './context.ts';
import type { Html } from './views/html.ts';
import { page, type Section } from './views/layout.ts';

export function renderPage(ctx: PanelContext, options: { title: string; main: Html; section?: Section; live?: boolean; status?: number }): void {
  const { access, session, project } = ctx.state;
  ctx.status = options.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page({
    t: ctx.state.t,
    language: ctx.state.language,
    title: options.title,
    main: options.main,
    ...(access && session ? { signedIn: { access, csrfToken: session.csrfToken } } : {}),
    ...(project && options.section ? { project: { id: project.id, name: project.name, section: options.section } } : {}),
    ...(options.live ? { live: true } : {}),
  });
}

/** 303 See Other: after a form post the browser fetches the next page with GET, so a reload never posts twice. */
export function redirect(ctx: PanelContext, location: string): void {
  ctx.status = 303;
  ctx.redirect(location);
}
