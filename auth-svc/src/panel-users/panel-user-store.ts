// The panel_users table. Password hashes are read only to verify a sign-in; no query returning a user to a caller
// selects them.
import type { Pool } from '@notify/platform/database';
import type { auth } from '@notify/proto';
import { isoTimestamp, type OrganizationRow, organizationColumns, type ProjectRow, projectColumns } from '../admin/records.ts';
import type { PasswordHash } from './password.ts';

export const panelRoles = ['viewer', 'operator'] as const;
export type PanelRole = (typeof panelRoles)[number];

export interface PanelUserRow {
  id: number;
  organization_id: number;
  email: string;
  role: PanelRole;
  created_at: Date;
  password_changed_at: Date;
  disabled_at: Date | null;
}

export interface CredentialsRow extends PanelUserRow {
  password_hash: Buffer;
  password_salt: Buffer;
  scrypt_n: number;
  scrypt_r: number;
  scrypt_p: number;
}

const userColumns = 'id, organization_id, email, role, created_at, password_changed_at, disabled_at';

export const toPanelUser = (row: PanelUserRow): auth.PanelUser__Output => ({
  id: row.id,
  organizationId: row.organization_id,
  email: row.email,
  role: row.role,
  createdAt: isoTimestamp(row.created_at),
  passwordChangedAt: isoTimestamp(row.password_changed_at),
  disabledAt: isoTimestamp(row.disabled_at),
});

export function storedHash(row: CredentialsRow): PasswordHash {
  return { hash: row.password_hash, salt: row.password_salt, n: row.scrypt_n, r: row.scrypt_r, p: row.scrypt_p };
}

export async function insertPanelUser(
  pool: Pool,
  user: { organizationId: number; email: string; role: PanelRole; password: PasswordHash },
): Promise<PanelUserRow> {
  const { password } = user;
  const { rows } = await pool.query<PanelUserRow>(
    `INSERT INTO panel_users (organization_id, email, role, password_hash, password_salt, scrypt_n, scrypt_r, scrypt_p)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${userColumns}`,
    [user.organizationId, user.email, user.role, password.hash, password.salt, password.n, password.r, password.p],
  );
  return rows[0] as PanelUserRow;
}

export async function findCredentials(pool: Pool, email: string): Promise<CredentialsRow | undefined> {
  const { rows } = await pool.query<CredentialsRow>({
    name: 'panel-user-credentials',
    text: `SELECT ${userColumns}, password_hash, password_salt, scrypt_n, scrypt_r, scrypt_p FROM panel_users WHERE email = $1`,
    values: [email],
  });
  return rows[0];
}

/**
 * Stores a new hash. `signOutEverywhere` moves password_changed_at, which ends every session opened before; an upgrade
 * of the same password to stronger parameters does not.
 */
export async function replacePassword(pool: Pool, id: number, password: PasswordHash, signOutEverywhere: boolean): Promise<PanelUserRow | undefined> {
  const { rows } = await pool.query<PanelUserRow>(
    `UPDATE panel_users
        SET password_hash = $2, password_salt = $3, scrypt_n = $4, scrypt_r = $5, scrypt_p = $6,
            password_changed_at = CASE WHEN $7 THEN now() ELSE password_changed_at END
      WHERE id = $1
  RETURNING ${userColumns}`,
    [id, password.hash, password.salt, password.n, password.r, password.p, signOutEverywhere],
  );
  return rows[0];
}

/** Disables the user; disabling twice keeps the first time. */
export async function disablePanelUser(pool: Pool, id: number): Promise<PanelUserRow | undefined> {
  const { rows } = await pool.query<PanelUserRow>(`UPDATE panel_users SET disabled_at = COALESCE(disabled_at, now()) WHERE id = $1 RETURNING ${userColumns}`, [
    id,
  ]);
  return rows[0];
}

export async function listPanelUsers(pool: Pool, organizationId: number): Promise<PanelUserRow[]> {
  const { rows } = await pool.query<PanelUserRow>(`SELECT ${userColumns} FROM panel_users WHERE organization_id = $1 ORDER BY id`, [organizationId]);
  return rows;
}

export interface AccessRows {
  readonly user: PanelUserRow;
  readonly organization: OrganizationRow;
  readonly projects: ProjectRow[];
}

/** An enabled user with their organization and its projects; undefined when the user is missing or disabled. */
export async function findAccess(pool: Pool, userId: number): Promise<AccessRows | undefined> {
  const found = await pool.query<PanelUserRow>({
    name: 'panel-user-access',
    text: `SELECT ${userColumns} FROM panel_users WHERE id = $1 AND disabled_at IS NULL`,
    values: [userId],
  });
  const user = found.rows[0];
  if (!user) return undefined;
  const [organization, projects] = await Promise.all([
    pool.query<OrganizationRow>({
      name: 'panel-organization',
      text: `SELECT ${organizationColumns} FROM organizations WHERE id = $1`,
      values: [user.organization_id],
    }),
    pool.query<ProjectRow>({
      name: 'panel-projects',
      text: `SELECT ${projectColumns} FROM projects WHERE organization_id = $1 ORDER BY name, id`,
      values: [user.organization_id],
    }),
  ]);
  const organizationRow = organization.rows[0];
  if (!organizationRow) return undefined;
  return { user, organization: organizationRow, projects: projects.rows };
}

export async function projectBelongs(pool: Pool, organizationId: number, projectId: number): Promise<boolean> {
  const { rowCount } = await pool.query({
    name: 'panel-project-belongs',
    text: 'SELECT 1 FROM projects WHERE id = $1 AND organization_id = $2',
    values: [projectId, organizationId],
  });
  return rowCount === 1;
}
