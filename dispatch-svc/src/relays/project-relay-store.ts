// Projects' own SMTP relays in PostgreSQL (table project_relays). The URL list is only ever held here sealed; this
// module neither opens nor logs it.
import type { Pool } from '@notify/platform/database';

/**
 * Sets the project's relays (its sealed URL list and the `host:port` of each). False when there is no such project.
 */
export async function upsertProjectRelay(pool: Pool, projectId: number, sealedSmtpUrl: string, relays: readonly string[]): Promise<boolean> {
  const result = await pool.query({
    name: 'project-relay-upsert',
    text: `INSERT INTO project_relays (project_id, sealed_smtp_url, relays)
           SELECT id, $2, $3 FROM projects WHERE id = $1
           ON CONFLICT (project_id) DO UPDATE SET sealed_smtp_url = EXCLUDED.sealed_smtp_url, relays = EXCLUDED.relays, updated_at = now()`,
    values: [projectId, sealedSmtpUrl, relays],
  });
  return result.rowCount === 1;
}

/** Clears the project's relays (back to SMTP_URL). False when there is no such project. */
export async function deleteProjectRelay(pool: Pool, projectId: number): Promise<boolean> {
  const result = await pool.query<{ found: boolean }>({
    name: 'project-relay-delete',
    text: `WITH removed AS (DELETE FROM project_relays WHERE project_id = $1) SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1) AS found`,
    values: [projectId],
  });
  return result.rows[0]?.found === true;
}

/** Every project with its own relays, its list still sealed. */
export async function listSealedProjectRelays(pool: Pool): Promise<{ projectId: number; sealedSmtpUrl: string }[]> {
  const result = await pool.query<{ projectId: string; sealedSmtpUrl: string }>({
    name: 'project-relay-list-sealed',
    text: `SELECT project_id AS "projectId", sealed_smtp_url AS "sealedSmtpUrl" FROM project_relays ORDER BY project_id`,
  });
  return result.rows.map((row) => ({ projectId: Number(row.projectId), sealedSmtpUrl: row.sealedSmtpUrl }));
}
