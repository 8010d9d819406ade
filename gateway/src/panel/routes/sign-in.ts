// Signing in and out. A sign-in is judged only when its form came from this site with its own token, and only while
// the address and the account are under their limits; a success always starts a brand-new session.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import type { auth } from '@notify/proto';
import type { Middleware } from 'koa';
import { type PanelContext, type PanelState, signedIn } from '../context.ts';
import type { PanelDeps } from '../dependencies.ts';
import { readForm } from '../form.ts';
import { redirect, renderPage } from '../render.ts';
import { csrfField, sameSiteRequest, tokensMatch } from '../security/csrf.ts';
import { clearSessionCookie, clearSignInCookie, readCookie, sessionCookie, setSessionCookie, setSignInCookie, signInCookie } from '../sessions/cookies.ts';
import { newToken } from '../sessions/session-store.ts';
import type { Notice } from '../views/pages.ts';
import { signInView } from '../views/pages.ts';
import { verifyCsrf } from './guards.ts';

const verifyDeadlineMs = 10_000;

/** Where to go after signing in: a panel path of this site, never another origin (`//evil.example`, `/\evil`). */
export function safeNext(value: string | null | undefined): string {
  if (!value?.startsWith('/panel/') || value.startsWith('/panel//') || /[\\\s]/.test(value)) return '/panel/';
  return value;
}

function showForm(ctx: PanelContext, form: { email: string; next: string; notice?: Notice; status?: number }): void {
  // Every form shown gets a fresh token, in its cookie and in its hidden field.
  const csrfToken = newToken();
  setSignInCookie(ctx, csrfToken);
  const { t } = ctx.state;
  renderPage(ctx, {
    title: t('signIn.title'),
    main: signInView(t, { csrfToken, email: form.email, next: form.next, ...(form.notice ? { notice: form.notice } : {}) }),
    ...(form.status ? { status: form.status } : {}),
  });
}

export function signInPage(): Middleware<PanelState> {
  return (ctx) => {
    const panel = ctx as PanelContext;
    const { t } = panel.state;
    const notice: Notice | undefined =
      ctx.query.signedOut !== undefined
        ? { kind: 'info', text: t('signIn.signedOut') }
        : ctx.query.next !== undefined
          ? { kind: 'info', text: t('signIn.required') }
          : undefined;
    const next = typeof ctx.query.next === 'string' ? ctx.query.next : undefined;
    showForm(panel, { email: '', next: safeNext(next), ...(notice ? { notice } : {}) });
  };
}

export function signIn(deps: PanelDeps): Middleware<PanelState> {
  return async (ctx) => {
    const panel = ctx as PanelContext;
    const { t } = panel.state;
    const form = await readForm(panel);
    const email = (form.get('email') ?? '').trim().slice(0, 254);
    const next = safeNext(form.get('next'));
    if (!sameSiteRequest(panel) || !tokensMatch(form.get(csrfField) ?? undefined, readCookie(panel, signInCookie))) {
      showForm(panel, { email, next, status: 403, notice: { kind: 'error', text: t('signIn.expired') } });
      return;
    }
    const decision = await deps.signInLimiter.attempt(panel.ip, email);
    if (!decision.allowed) {
      ctx.set('Retry-After', String(decision.retryAfterSeconds));
      showForm(panel, { email, next, status: 429, notice: { kind: 'error', text: t('signIn.throttled', { seconds: decision.retryAfterSeconds }) } });
      return;
    }
    let user: auth.PanelUser__Output;
    try {
      // A memory-hard hash takes its time on purpose: more than the gateway's usual deadline allows under load.
      user = await deps.auth.call('VerifyPanelCredentials', { email, password: form.get('password') ?? '' }, { deadlineMs: verifyDeadlineMs });
    } catch (error) {
      if (!(error instanceof RemoteError && error.status === status.UNAUTHENTICATED)) {
        await deps.signInLimiter.notJudged(email);
        throw error;
      }
      showForm(panel, { email, next, status: 401, notice: { kind: 'error', text: t('signIn.invalid') } });
      return;
    }
    await deps.signInLimiter.succeeded(email);
    // Whatever session this browser had (another user's, an expired one) ends here.
    const previous = readCookie(panel, sessionCookie);
    if (previous) await deps.sessions.destroy(previous);
    const { id } = await deps.sessions.create({ userId: user.id, organizationId: user.organizationId, passwordChangedAt: user.passwordChangedAt });
    setSessionCookie(panel, id);
    clearSignInCookie(panel);
    deps.logger.info({ panelUserId: user.id, organizationId: user.organizationId, requestId: panel.state.requestId }, 'panel sign-in');
    redirect(panel, next);
  };
}

export function signOut(deps: PanelDeps): Middleware<PanelState> {
  return async (ctx) => {
    const panel = ctx as PanelContext;
    verifyCsrf(panel, await readForm(panel));
    await deps.sessions.destroy(signedIn(panel).sessionId);
    clearSessionCookie(panel);
    redirect(panel, '/panel/sign-in?signedOut');
  };
}
