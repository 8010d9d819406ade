// The project of each endpoint a replica sends to: a delivery names only its event and endpoint, and the sender must
// know the project before the delivery takes a slot (fair-share.ts). Read from webhook_endpoints once per endpoint,
// the endpoints asked about at once in one statement, and kept: an endpoint never moves to another project.
import { Batcher, fulfilled } from '@notify/platform';
import type { Pool } from '@notify/platform/database';

/** Endpoints whose project is kept at most: past this the longest kept is forgotten (and read again if it comes back). */
const maxKept = 100_000;

export class EndpointProjects {
  readonly #known = new Map<number, number>();
  readonly #lookups: Batcher<number, number | undefined>;

  constructor(pool: Pool, settings: { readonly maxBatch: number }) {
    this.#lookups = new Batcher({
      maxBatchSize: settings.maxBatch,
      concurrency: 1,
      run: async (endpointIds) => (await projectsOf(pool, endpointIds)).map(fulfilled),
    });
  }

  /** The endpoint's project, or undefined when the endpoint no longer exists. */
  async of(endpointId: number): Promise<number | undefined> {
    const known = this.#known.get(endpointId);
    if (known !== undefined) return known;
    const projectId = await this.#lookups.submit(endpointId);
    if (projectId !== undefined) this.#keep(endpointId, projectId);
    return projectId;
  }

  #keep(endpointId: number, projectId: number): void {
    this.#known.set(endpointId, projectId);
    if (this.#known.size > maxKept) this.#known.delete(this.#known.keys().next().value as number);
  }
}

/** The project of each endpoint named, in order (undefined for one that does not exist). */
async function projectsOf(pool: Pool, endpointIds: readonly number[]): Promise<Array<number | undefined>> {
  const found = await pool.query<{ id: string; projectId: string }>({
    name: 'webhook-endpoint-projects',
    text: 'SELECT id, project_id AS "projectId" FROM webhook_endpoints WHERE id = ANY ($1::bigint[])',
    values: [endpointIds],
  });
  const projects = new Map(found.rows.map((row) => [Number(row.id), Number(row.projectId)]));
  return endpointIds.map((endpointId) => projects.get(endpointId));
}
