// What the panel's middleware share about one request (on `ctx.state`), and the error a panel handler throws to
// answer with an error page.
import type { RouterContext } from '@koa/router';
import type { auth } from '@notify/proto';
import type { GatewayState } from '../http/state.ts';
import type { PanelTextKey, Translate } from './i18n/texts.ts';
import type { PanelSession } from './sessions/session-store.ts';

/** A signed-in user's view of auth-svc: who they are, their organization, its projects. */
export interface PanelAccess {
  readonly user: auth.PanelUser__Output;
  readonly organization: auth.Organization__Output;
  readonly projects: readonly auth.Project__Output[];
}

export interface PanelState extends GatewayState {
  /** Texts in the request's language. */
  t: Translate;
  /** The request reached the gateway over HTTPS (directly or through a trusted proxy, ctx.secure), or PANEL_COOKIE_SECURE. */
  secureCookies: boolean;
  /** Set by requireSignIn. */
  sessionId?: string;
  session?: PanelSession;
  access?: PanelAccess;
  /** Set by requireProject: the project of the URL, one of the user's organization's. */
  project?: auth.Project__Output;
}

export type PanelContext = RouterContext<PanelState>;

/** Thrown by panel handlers; rendered as an HTML page with this status (panel.ts), never as the API's JSON. */
export class PanelError extends Error {
  override name = 'PanelError';
  readonly status: number;
  readonly title: PanelTextKey;
  readonly text: PanelTextKey;
  readonly headers: Readonly<Record<string, string>>;
  constructor(status: number, title: PanelTextKey, text: PanelTextKey, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(`${status}: ${title}`, { cause: options.cause });
    this.status = status;
    this.title = title;
    this.text = text;
    this.headers = options.headers ?? {};
  }
}

/**
 * The answer for anything a user may not see: another organization's project or message is "not found", exactly
 * like one that does not exist, so the panel never confirms that it does.
 */
export const notFound = (): PanelError => new PanelError(404, 'error.notFound', 'error.notFoundText');

/** The signed-in state requireSignIn guarantees, for handlers that run after it. */
export function signedIn(ctx: PanelContext): { session: PanelSession; access: PanelAccess; sessionId: string } {
  const { session, access, sessionId } = ctx.state;
  if (!session || !access || !sessionId) throw new Error('handler mounted without requireSignIn');
  return { session, access, sessionId };
}

export function currentProject(ctx: PanelContext): auth.Project__Output {
  const { project } = ctx.state;
  if (!project) throw new Error('handler mounted without requireProject');
  return project;
}
