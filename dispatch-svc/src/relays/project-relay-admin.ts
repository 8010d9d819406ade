// Projects' own SMTP relays: ProjectRelayAdminService for notifyctl (admin token) sets or clears a project's list;
// RelayRouteService (mailer token) hands the mailers every project's list, still sealed (NOTIFY_DATA_KEY opens it
// there). A list is sealed as soon as it is read from the request and only its relays' `host:port` is ever answered
// or stored in the clear: the URLs hold credentials.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type DataKey, parseRelayUrls, projectRelaySealContext, relayAddress } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import { deleteProjectRelay, listSealedProjectRelays, upsertProjectRelay } from './project-relay-store.ts';

export interface ProjectRelayDeps {
  readonly pool: Pool;
  readonly dataKey: DataKey;
}

function invalid(fault: string): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${fault}`, { fields: [fault] });
}

export function projectRelayAdminHandlers(deps: ProjectRelayDeps): AsyncHandlers<dispatch.ProjectRelayAdminServiceDefinition> {
  return {
    async SetProjectRelay(request) {
      const { projectId } = request;
      if (!Number.isSafeInteger(projectId) || projectId <= 0) throw invalid('project_id: must be a positive integer');
      const notFound = () => new UserError(status.NOT_FOUND, 'project_not_found', `no project ${projectId}`);
      if (request.smtpUrl.trim() === '') {
        if (!(await deleteProjectRelay(deps.pool, projectId))) throw notFound();
        return { projectId, relays: [] };
      }
      let urls: string[];
      try {
        urls = parseRelayUrls(request.smtpUrl);
      } catch (error) {
        // parseRelayUrls names a faulty entry by position only: the message never repeats a credential.
        throw invalid(`smtp_url: ${(error as Error).message}`);
      }
      const relays = urls.map(relayAddress);
      const sealed = deps.dataKey.seal(urls.join(','), projectRelaySealContext(projectId));
      if (!(await upsertProjectRelay(deps.pool, projectId, sealed, relays))) throw notFound();
      return { projectId, relays };
    },
  };
}

export function relayRouteHandlers(deps: Pick<ProjectRelayDeps, 'pool'>): AsyncHandlers<dispatch.RelayRouteServiceDefinition> {
  return {
    async ListProjectRelays() {
      return { projects: await listSealedProjectRelays(deps.pool) };
    },
  };
}
