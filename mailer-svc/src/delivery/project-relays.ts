// The relays projects name for themselves (notifyctl project update --smtp-url-file), as the mailer routes by them: fetched
// sealed from dispatch-svc (RelayRouteService), opened with NOTIFY_DATA_KEY, held in memory and fetched again every
// RELAY_ROUTES_REFRESH, so a change takes effect without a restart and no relay URL ever travels in a job. While
// dispatch-svc cannot answer, the last lists are kept; before its first answer nothing says which projects have lists
// of their own, so the mailer takes no job until then (main.ts).
// The URLs hold credentials: only project ids and relay addresses are logged.
import type { Logger } from '@notify/platform';
import { type DataKey, parseRelayUrls, projectRelaySealContext, relayAddress } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import type { ProjectRoutes } from './relays.ts';

export interface ProjectRelayDeps {
  readonly dataKey: DataKey;
  /** RelayRouteService.ListProjectRelays; rejects with RemoteError. */
  readonly fetch: () => Promise<dispatch.ListProjectRelaysResponse__Output>;
  readonly logger: Logger;
}

export class ProjectRelays implements ProjectRoutes {
  readonly #deps: ProjectRelayDeps;
  #routes = new Map<number, readonly string[]>();
  #loaded = false;

  constructor(deps: ProjectRelayDeps) {
    this.#deps = deps;
  }

  /** Whether dispatch-svc has answered once: until then a project's own relays are unknown. */
  loaded(): boolean {
    return this.#loaded;
  }

  urls(projectId: number): readonly string[] | undefined {
    return this.#routes.get(projectId);
  }

  named(): Iterable<string> {
    return [...this.#routes.values()].flat();
  }

  /** Fetches the lists again; never throws (a failure keeps the last ones and is logged). True when they changed. */
  async refresh(): Promise<boolean> {
    let answer: dispatch.ListProjectRelaysResponse__Output;
    try {
      answer = await this.#deps.fetch();
    } catch (error) {
      this.#deps.logger.warn({ err: error, projects: this.#routes.size }, "fetching the projects' relays failed; keeping the last ones");
      return false;
    }
    const next = this.#open(answer);
    const changed = this.#tellChanges(next);
    this.#routes = next;
    this.#loaded = true;
    return changed;
  }

  /** The lists dispatch-svc answered, opened; a project whose list cannot be opened keeps what it had. */
  #open(answer: dispatch.ListProjectRelaysResponse__Output): Map<number, readonly string[]> {
    const next = new Map<number, readonly string[]>();
    for (const { projectId, sealedSmtpUrl } of answer.projects) {
      try {
        next.set(projectId, parseRelayUrls(this.#deps.dataKey.open(sealedSmtpUrl, projectRelaySealContext(projectId))));
      } catch {
        // No cause attached: neither the error nor the sealed value is for the logs. The project keeps what it had.
        this.#deps.logger.error(
          { projectId },
          "a project's relays cannot be opened with NOTIFY_DATA_KEY (is it the same secret dispatch-svc has?); keeping the last ones",
        );
        const kept = this.#routes.get(projectId);
        if (kept) next.set(projectId, kept);
      }
    }
    return next;
  }

  /** Logs each project whose routing `next` changes; true when any does. */
  #tellChanges(next: ReadonlyMap<number, readonly string[]>): boolean {
    const same = (urls: readonly string[] | undefined, other: readonly string[] | undefined): boolean => urls?.join(',') === other?.join(',');
    let changed = false;
    for (const [projectId, urls] of next) {
      if (same(urls, this.#routes.get(projectId))) continue;
      changed = true;
      this.#deps.logger.info({ projectId, relays: urls.map(relayAddress) }, "routing the project's mail through its own relays");
    }
    for (const projectId of this.#routes.keys()) {
      if (next.has(projectId)) continue;
      changed = true;
      this.#deps.logger.info({ projectId }, "routing the project's mail through SMTP_URL again");
    }
    return changed;
  }
}
