// How one replica shares its request slots so that no tenant stalls another's webhooks. An endpoint may hold at most
// `endpointConcurrency` of them and a project, all its endpoints together, at most `projectConcurrency`: a project
// whose many endpoints hang leaves the rest of the slots to the other projects. An endpoint whose latest requests
// timed out, one after another, may hold only one slot until a request to it ends otherwise: a host that accepts and
// never answers then keeps one slot for each of its endpoints, not the share a healthy one gets.

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
  /** Slots each project holds now (a project holding none is absent). */
  readonly #openByProject = new Map<number, number>();
  /** Requests that timed out in a row, of each endpoint whose latest request timed out. */
  readonly #timeoutRuns = new Map<number, number>();

  constructor(settings: FairShareSettings) {
    this.#settings = settings;
  }

  /** The slots the endpoint may hold now. */
  endpointLimit(endpointId: number): number {
    return this.#isSlowed(endpointId) ? 1 : this.#settings.endpointConcurrency;
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
