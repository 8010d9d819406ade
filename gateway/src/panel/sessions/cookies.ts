// The panel's two cookies: the session id (HttpOnly, SameSite=Lax so a link into the panel from a mail keeps the
// user signed in, Secure over HTTPS) and the sign-in form's CSRF token (SameSite=Strict, only sent to the sign-in path).
import type { PanelContext } from '../context.ts';

export const sessionCookie = 'notify_panel_session';
export const signInCookie = 'notify_panel_sign_in';

const signInFormLifetimeMs = 60 * 60_000;

function set(ctx: PanelContext, name: string, value: string | null, options: { path: string; sameSite: 'lax' | 'strict'; maxAge?: number }): void {
  // Koa refuses Secure cookies on a plain connection unless told the connection counts as secure: behind a TLS proxy
  // (TRUSTED_PROXY_HOPS and its X-Forwarded-Proto, or PANEL_COOKIE_SECURE) it does.
  ctx.cookies.secure = ctx.state.secureCookies;
  ctx.cookies.set(name, value, {
    httpOnly: true,
    secure: ctx.state.secureCookies,
    path: options.path,
    sameSite: options.sameSite,
    overwrite: true,
    signed: false,
    ...(options.maxAge === undefined ? {} : { maxAge: options.maxAge }),
  });
}

export function readCookie(ctx: PanelContext, name: string): string | undefined {
  return ctx.cookies.get(name, { signed: false }) || undefined;
}

/** A browser-session cookie: closing the browser ends it; the server ends it sooner (idle timeout, lifetime, sign-out). */
export function setSessionCookie(ctx: PanelContext, id: string): void {
  set(ctx, sessionCookie, id, { path: '/panel', sameSite: 'lax' });
}

export function clearSessionCookie(ctx: PanelContext): void {
  set(ctx, sessionCookie, null, { path: '/panel', sameSite: 'lax' });
}

export function setSignInCookie(ctx: PanelContext, token: string): void {
  set(ctx, signInCookie, token, { path: '/panel/sign-in', sameSite: 'strict', maxAge: signInFormLifetimeMs });
}

export function clearSignInCookie(ctx: PanelContext): void {
  set(ctx, signInCookie, null, { path: '/panel/sign-in', sameSite: 'strict' });
}
