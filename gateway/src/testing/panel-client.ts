// A signed-in browser for the panel's route tests: sessions made in the served app's own store, and form posts as the
// panel's pages send them.
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, authProto } from '@notify/proto';
import { sessionCookie } from '../panel/sessions/cookies.ts';
import { gatewayCaller, type ServedApp } from './serve-app.ts';
import { standIn } from './stand-in.ts';

export interface PanelVisitor {
  readonly cookie: string;
  readonly csrf: string;
}

export interface PanelClient {
  signIn(user: auth.PanelUser__Output): Promise<PanelVisitor>;
  get(path: string, who: { cookie: string }, headers?: Record<string, string>): Promise<Response>;
  /** A form post, redirects not followed. */
  post(path: string, who: { cookie: string }, form: Array<[string, string]>, headers?: Record<string, string>): Promise<Response>;
}

/** `app()` is read at each call: the app is served in a `before` hook, after the client is made. */
export function panelClient(app: () => ServedApp): PanelClient {
  return {
    async signIn(user) {
      const { panel } = app();
      assert.ok(panel, 'served with the panel');
      const { id, session } = await panel.sessions.create({ userId: user.id, organizationId: user.organizationId, passwordChangedAt: user.passwordChangedAt });
      return { cookie: `${sessionCookie}=${id}`, csrf: session.csrfToken };
    },
    get: (path, who, headers = {}) => fetch(`${app().url}${path}`, { headers: { cookie: who.cookie, ...headers } }),
    post: (path, who, form, headers = {}) =>
      fetch(`${app().url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: who.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
      }),
  };
}

/** Adds auth-svc's PanelAuthService to `services`, answering each of `users` with its organization and projects. */
export function servePanelAccess(
  services: GrpcServer,
  access: { users: auth.PanelUser__Output[]; organization: auth.PanelAccess__Output['organization']; projects: auth.PanelAccess__Output['projects'] },
): void {
  services.add(
    authProto.PanelAuthService.service,
    standIn(authProto.PanelAuthService.service, {
      async GetPanelAccess(request: auth.GetPanelAccessRequest__Output): Promise<auth.PanelAccess__Output> {
        const user = access.users.find((candidate) => candidate.id === request.userId);
        if (!user) throw new UserError(status.NOT_FOUND, 'panel_user_not_found', 'no such user');
        return { user, organization: access.organization, projects: access.projects };
      },
    }),
    [gatewayCaller],
  );
}
