// The checks in front of panel pages: a live session (else to the sign-in page), a project of the user's own
// organization (else "not found"), the operator role for what changes things, and the CSRF token of every form post.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import type { auth } from '@notify/proto';
import type { Middleware } from 'koa';
import { notFound, type PanelContext, PanelError, type PanelState, signedIn } from '../context.ts';
import type { PanelDeps } from '../dependencies.ts';
import { redirect } from '../render.ts';
import { csrfField, sameSiteRequest, tokensMatch } from '../security/csrf.ts';
import { clearSessionCookie, readCookie, sessionCookie } from '../sessions/cookies.ts';

/** Where a signed-out visitor goes: the sign-in page, coming back here afterwards (for pages, not for posts). */
function toSignIn(ctx: PanelContext, json: boolean): void {
  if (json) {
    ctx.status = 401;
    ctx.body = { signedIn: false };
    return;
  }
  const next = ctx.method === 'GET' ? `?next=${encodeURIComponent(ctx.originalUrl)}` : '';
  redirect(ctx, `/panel/sign-in${next}`);
}

/**
 * Resolves the session cookie and asks auth-svc who the user is now, on every request: a disabled user, a changed
 * password or a moved organization ends the session at once, on every replica.
 */
export function requireSignIn(deps: PanelDeps, options: { json?: boolean } = {}): Middleware<PanelState> {
  return async (ctx, next) => {
    const panel = ctx as PanelContext;
    const sessionId = readCookie(panel, sessionCookie);
    const session = sessionId ? await deps.sessions.read(sessionId) : undefined;
    if (!sessionId || !session) {
      if (sessionId) clearSessionCookie(panel);
      toSignIn(panel, options.json ?? false);
      return;
    }
    let access: auth.PanelAccess__Output | undefined;
    try {
      access = await deps.auth.call('GetPanelAccess', { userId: session.userId });
    } catch (error) {
      if (!(error instanceof RemoteError && error.status === status.NOT_FOUND)) throw error;
    }
    const user = access?.user;
    const organization = access?.organization;
    // A session opened before the password last changed belongs to whoever knew the old one.
    if (!access || !user || !organization || user.organizationId !== session.organizationId || user.passwordChangedAt !== session.passwordChangedAt) {
      await deps.sessions.destroy(sessionId);
      clearSessionCookie(panel);
      toSignIn(panel, options.json ?? false);
      return;
    }
    ctx.state.sessionId = sessionId;
    ctx.state.session = session;
    ctx.state.access = { user, organization, projects: access.projects };
    await next();
  };
}

const idPattern = /^[1-9][0-9]{0,15}$/;

/** A positive id from the URL, or "not found" for anything else. */
export function idParam(ctx: PanelContext, name: string): number {
  const value = ctx.params[name] ?? '';
  if (!idPattern.test(value)) throw notFound();
  return Number(value);
}

/** The URL's project, when it is one of the user's organization's; any other answers "not found", never "forbidden". */
export function requireProject(): Middleware<PanelState> {
  return async (ctx, next) => {
    const panel = ctx as PanelContext;
    const id = idParam(panel, 'projectId');
    const project = signedIn(panel).access.projects.find((candidate) => candidate.id === id);
    if (!project) throw notFound();
    ctx.state.project = project;
    await next();
  };
}

export function isOperator(ctx: PanelContext): boolean {
  return signedIn(ctx).access.user.role === 'operator';
}

/** A form post of a signed-in user: from this site, carrying the session's token. */
export function verifyCsrf(ctx: PanelContext, form: URLSearchParams): void {
  const { session } = signedIn(ctx);
  if (!sameSiteRequest(ctx) || !tokensMatch(form.get(csrfField) ?? undefined, session.csrfToken)) {
    throw new PanelError(403, 'error.csrf', 'error.csrfText');
  }
}
