// How one replica shares its request slots so that no tenant stalls another's webhooks. An endpoint may hold at most
// `endpointConcurrency` requests, all replicas together: each live replica takes its part (platform's evenShare, the
// remainder going to different replicas for different endpoints), so with more replicas than that some hold none of
// an endpoint's requests and hand its deliveries back for another replica. A project, all its endpoints together, may
// hold at most `projectConcurrency` of a replica's slots: a project whose many endpoints hang leaves the rest of the
// slots to the other projects. An endpoint whose latest requests timed out, one after another, may hold only one slot
// of a replica until a request to it ends otherwise: a host that accepts and never answers then keeps one slot for
// each of its endpoints, not the share a healthy one gets.
import { evenShare, type ReplicaCount } from '@notify/platform/nats';

export interface FairShareSettings {
  readonly endpointConcurrency: number;
  readonly projectConcurrency: number;
}

/** Requests to one endpoint that time out in a row before it may hold only one slot. */
export const timeoutsBeforeSlowed = 3;

/** Endpoints whose run of timeouts is kept at most: past this the oldest run is forgotten, so memory stays bounded. */
const maxRunsKept = 10_000;

export class FairShare {
  readonly #settings: FairShareSettings;
  readonly #replicas: () => ReplicaCount;
  /** Slots each project holds now (a project holding none is absent). */
  readonly #openByProject = new Map<number, number>();
  /** Requests that timed out in a row, of each endpoint whose latest request timed out. */
  readonly #timeoutRuns = new Map<number, number>();

  /** `replicas`: the live replicas of webhook-svc and this one's rank (ReplicaPresence); one alone by default. */
  constructor(settings: FairShareSettings, replicas: () => ReplicaCount = () => ({ count: 1, rank: 0 })) {
    this.#settings = settings;
    this.#replicas = replicas;
  }

  /** The slots of this replica the endpoint may hold now: its part of the endpoint's limit, one while it is slowed. */
  endpointLimit(endpointId: number): number {
    const { count, rank } = this.#replicas();
    const part = evenShare(this.#settings.endpointConcurrency, count, rank, endpointId);
    return this.#isSlowed(endpointId) ? Math.min(1, part) : part;
  }

  /** Whether one of the project's endpoints may take another slot. */
  projectHasRoom(projectId: number): boolean {
    return (this.#openByProject.get(projectId) ?? 0) < this.#settings.projectConcurrency;
  }

  /** One of the project's endpoints took a slot. */
  take(projectId: number): void {
    this.#openByProject.set(projectId, (this.#openByProject.get(projectId) ?? 0) + 1);
  }

  /** One of the project's endpoints gave a slot back. */
  release(projectId: number): void {
    const open = (this.#openByProject.get(projectId) ?? 0) - 1;
    if (open > 0) this.#openByProject.set(projectId, open);
    else this.#openByProject.delete(projectId);
  }

  /**
   * A request to the endpoint ended: it timed out, or not (an answer of any status, a refused connection: neither held
   * its slot for long). Says whether this timeout is the one that slowed the endpoint down.
   */
  requestEnded(endpointId: number, timedOut: boolean): boolean {
    if (!timedOut) {
      this.#timeoutRuns.delete(endpointId);
      return false;
    }
    const run = (this.#timeoutRuns.get(endpointId) ?? 0) + 1;
    // Deleted first so the endpoint becomes the newest kept: the one forgotten is the one that timed out longest ago.
    this.#timeoutRuns.delete(endpointId);
    this.#timeoutRuns.set(endpointId, run);
    if (this.#timeoutRuns.size > maxRunsKept) this.#timeoutRuns.delete(this.#timeoutRuns.keys().next().value as number);
    return run === timeoutsBeforeSlowed;
  }

  /** Whether the endpoint's latest requests timed out in a row often enough that it may hold only one slot. */
  #isSlowed(endpointId: number): boolean {
    return (this.#timeoutRuns.get(endpointId) ?? 0) >= timeoutsBeforeSlowed;
  }
}
