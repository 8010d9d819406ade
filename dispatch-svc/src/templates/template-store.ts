// The templates table. A template is identified by (project, slug); every content change makes a new version, and
// messages keep the version they were accepted with. `active` and `unsubscribe` (RFC 8058 headers on its mails) are
// choices about how the template is used, not content: they live on the row, and changing them alone makes no version.
// The row holds the content of the version sends use; template_versions holds every version, and the public API may add
// one without using it (template-api-store.ts). A deleted template keeps its row (`deleted_at`) for the messages that
// reference it, and is found by none of these reads.

import type { Pool, PoolClient } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { AnySchemaObject } from 'ajv';

/** The slug rule of the public API and of the table's CHECK constraint. */
export const slugPattern = /^[A-Za-z0-9_-]{1,100}$/;

export interface TemplateRow {
  readonly id: number;
  readonly projectId: number;
  readonly slug: string;
  readonly version: number;
  readonly active: boolean;
  readonly subject: string;
  readonly html: string;
  readonly text: string;
  readonly variablesSchema: AnySchemaObject | null;
  readonly unsubscribe: boolean;
  /** The newest version's number: `version` (the one sends use) or a newer one uploaded without being activated. */
  readonly latestVersion: number;
  /** Counts the row's changes (a trigger of the table): part of the public API's ETag. */
  readonly revision: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface TemplateContent {
  readonly subject: string;
  readonly html: string;
  readonly text: string;
  /** JSON text of the schema, or null for none. */
  readonly variablesSchemaJson: string | null;
}

export const columns = `id, project_id AS "projectId", slug, version, active, subject, html, text,
                 variables_schema AS "variablesSchema", unsubscribe, latest_version AS "latestVersion",
                 revision::text AS revision, created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function findTemplate(db: Pool | PoolClient, projectId: number, slug: string): Promise<TemplateRow | undefined> {
  const result = await db.query<TemplateRow>({
    name: 'template-find',
    text: `SELECT ${columns} FROM templates WHERE project_id = $1 AND slug = $2 AND deleted_at IS NULL`,
    values: [projectId, slug],
  });
  return result.rows[0];
}

/** The templates of these (project, slug) pairs that exist, keyed by templateKey. */
export async function findTemplates(client: PoolClient, wanted: readonly { projectId: number; slug: string }[]): Promise<Map<string, TemplateRow>> {
  const result = await client.query<TemplateRow>({
    name: 'template-find-many',
    text: `SELECT ${columns} FROM templates
            WHERE (project_id, slug) IN (SELECT * FROM unnest($1::bigint[], $2::text[])) AND deleted_at IS NULL`,
    values: [wanted.map((w) => w.projectId), wanted.map((w) => w.slug)],
  });
  return new Map(result.rows.map((row) => [templateKey(row.projectId, row.slug), row]));
}

export const templateKey = (projectId: number, slug: string): string => `${projectId}/${slug}`;

export async function listTemplates(pool: Pool, projectId: number): Promise<TemplateRow[]> {
  const result = await pool.query<TemplateRow>(`SELECT ${columns} FROM templates WHERE project_id = $1 AND deleted_at IS NULL ORDER BY slug`, [projectId]);
  return result.rows;
}

/** A project and the organization a panel user belongs to: a project of another organization has no templates. */
export interface OrganizationProject {
  readonly projectId: number;
  readonly organizationId: number;
}

/** The condition that project $1 is organization $2's. */
export const ownedProject = 'EXISTS (SELECT 1 FROM projects p WHERE p.id = $1 AND p.organization_id = $2)';

export async function listOrganizationTemplates(pool: Pool, target: OrganizationProject): Promise<TemplateRow[]> {
  const result = await pool.query<TemplateRow>(
    `SELECT ${columns} FROM templates WHERE project_id = $1 AND deleted_at IS NULL AND ${ownedProject} ORDER BY slug`,
    [target.projectId, target.organizationId],
  );
  return result.rows;
}

export async function findOrganizationTemplate(pool: Pool, target: OrganizationProject, slug: string): Promise<TemplateRow | undefined> {
  const result = await pool.query<TemplateRow>(
    `SELECT ${columns} FROM templates WHERE project_id = $1 AND slug = $3 AND deleted_at IS NULL AND ${ownedProject}`,
    [target.projectId, target.organizationId, slug],
  );
  return result.rows[0];
}

/** The row's flags a put may set; an absent one keeps its value (false for a new template). */
export interface TemplateFlags {
  readonly active?: boolean | undefined;
  readonly unsubscribe?: boolean | undefined;
}

/**
 * Creates the template at version 1 (inactive unless `active` is true), or replaces its content as the next version
 * (its flags unchanged unless given), numbered after the latest one even when an older one is in use. One statement,
 * so concurrent puts each get their own version.
 */
export async function putTemplate(pool: Pool, projectId: number, slug: string, content: TemplateContent, flags: TemplateFlags = {}): Promise<TemplateRow> {
  const result = await pool.query<TemplateRow>(
    `INSERT INTO templates (project_id, slug, subject, html, text, variables_schema, active, unsubscribe)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, COALESCE($7::boolean, false), COALESCE($8::boolean, false))
     ON CONFLICT (project_id, slug) WHERE deleted_at IS NULL DO UPDATE
       SET subject = EXCLUDED.subject, html = EXCLUDED.html, text = EXCLUDED.text, variables_schema = EXCLUDED.variables_schema,
           version = templates.latest_version + 1, latest_version = templates.latest_version + 1,
           active = COALESCE($7::boolean, templates.active), unsubscribe = COALESCE($8::boolean, templates.unsubscribe), updated_at = now()
     RETURNING ${columns}`,
    [projectId, slug, content.subject, content.html, content.text, content.variablesSchemaJson, flags.active ?? null, flags.unsubscribe ?? null],
  );
  const row = result.rows[0];
  if (!row) throw new Error('INSERT ... RETURNING returned no row');
  return row;
}

export async function setTemplateActive(pool: Pool, projectId: number, slug: string, active: boolean): Promise<TemplateRow | undefined> {
  const result = await pool.query<TemplateRow>(
    `UPDATE templates SET active = $3, updated_at = now() WHERE project_id = $1 AND slug = $2 AND deleted_at IS NULL RETURNING ${columns}`,
    [projectId, slug, active],
  );
  return result.rows[0];
}

/**
 * Turns the one-click unsubscribe headers of the template's future mails on or off; no new version. Only a template
 * of a project of `organizationId` (the panel user's).
 */
export async function setTemplateUnsubscribe(
  pool: Pool,
  target: OrganizationProject & { slug: string },
  unsubscribe: boolean,
): Promise<TemplateRow | undefined> {
  const result = await pool.query<TemplateRow>({
    name: 'template-set-unsubscribe',
    text: `UPDATE templates SET unsubscribe = $4, updated_at = now()
            WHERE project_id = $1 AND slug = $3 AND deleted_at IS NULL AND ${ownedProject}
            RETURNING ${columns}`,
    values: [target.projectId, target.organizationId, target.slug, unsubscribe],
  });
  return result.rows[0];
}

export function toTemplateMessage(row: TemplateRow): dispatch.Template__Output {
  return {
    id: row.id,
    projectId: row.projectId,
    slug: row.slug,
    version: row.version,
    active: row.active,
    subject: row.subject,
    html: row.html,
    text: row.text,
    variablesSchemaJson: row.variablesSchema === null ? '' : JSON.stringify(row.variablesSchema),
    updatedAt: row.updatedAt.toISOString(),
    unsubscribe: row.unsubscribe,
  };
}
