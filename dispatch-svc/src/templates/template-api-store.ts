// The public API's writes and reads of templates (template-api.ts), on the rows template-store.ts describes. Every
// template here is a live one of a project of the caller's organization. A change locks the row first, so the ETag it
// is judged against is the one it replaces, and concurrent changes are numbered one after the other.
import type { Pool, PoolClient } from '@notify/platform/database';
import type { AnySchemaObject } from 'ajv';
import { columns, type OrganizationProject, ownedProject, type TemplateContent, type TemplateRow } from './template-store.ts';

/**
 * The template's strong entity tag: its id, the version sends use and the row's change count, which every write of the
 * row moves (a trigger), so a tag read before any change no longer matches after it.
 */
export const etagOf = (row: Pick<TemplateRow, 'id' | 'version' | 'revision'>): string => `"${row.id}-${row.version}-${row.revision}"`;

/**
 * Whether an If-Match header (RFC 9110, 13.1.1) lets a change of the template tagged `etag` go ahead: `*`, or a list
 * naming it. Weak tags never match, as the strong comparison requires.
 */
export function ifMatchAllows(header: string, etag: string): boolean {
  const value = header.trim();
  if (value === '*') return true;
  return value.split(',').some((tag) => tag.trim() === etag);
}

/** The live template, locked for a change; another organization's project has none. */
export async function lockTemplate(client: PoolClient, target: OrganizationProject, slug: string): Promise<TemplateRow | undefined> {
  const { rows } = await client.query<TemplateRow>({
    name: 'template-api-lock',
    text: `SELECT ${columns} FROM templates WHERE project_id = $1 AND slug = $3 AND deleted_at IS NULL AND ${ownedProject} FOR UPDATE`,
    values: [target.projectId, target.organizationId, slug],
  });
  return rows[0];
}

/** A page of the project's live templates by slug, after `after` ('' for the first); one row more says a next exists. */
export async function pageTemplates(pool: Pool, target: OrganizationProject, query: { limit: number; after: string }): Promise<TemplateRow[]> {
  const { rows } = await pool.query<TemplateRow>({
    name: 'template-api-page',
    text: `SELECT ${columns} FROM templates
            WHERE project_id = $1 AND deleted_at IS NULL AND slug > $3 AND ${ownedProject}
            ORDER BY slug LIMIT $4`,
    values: [target.projectId, target.organizationId, query.after, query.limit + 1],
  });
  return rows;
}

/** Creates the template at version 1, active; undefined when the project has a live one with this slug. */
export async function insertTemplate(client: PoolClient, projectId: number, slug: string, content: TemplateContent): Promise<TemplateRow | undefined> {
  const { rows } = await client.query<TemplateRow>({
    name: 'template-api-insert',
    text: `INSERT INTO templates (project_id, slug, subject, html, text, variables_schema, active)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, true)
           ON CONFLICT (project_id, slug) WHERE deleted_at IS NULL DO NOTHING
           RETURNING ${columns}`,
    values: [projectId, slug, content.subject, content.html, content.text, content.variablesSchemaJson],
  });
  return rows[0];
}

/**
 * Adds a version numbered after the latest (never reusing a number, even when an older one is in use). Activated, the
 * row takes its content and the table's trigger records it; kept aside, only template_versions gets it.
 */
export async function addVersion(client: PoolClient, row: TemplateRow, content: TemplateContent, activate: boolean): Promise<TemplateRow> {
  if (activate) {
    const { rows } = await client.query<TemplateRow>({
      name: 'template-api-add-active',
      text: `UPDATE templates SET subject = $2, html = $3, text = $4, variables_schema = $5::jsonb, version = latest_version + 1,
                    latest_version = latest_version + 1, active = true, updated_at = now()
              WHERE id = $1 RETURNING ${columns}`,
      values: [row.id, content.subject, content.html, content.text, content.variablesSchemaJson],
    });
    return rows[0] as TemplateRow;
  }
  const { rows } = await client.query<TemplateRow>({
    name: 'template-api-add-draft',
    text: `UPDATE templates SET latest_version = latest_version + 1, updated_at = now() WHERE id = $1 RETURNING ${columns}`,
    values: [row.id],
  });
  const updated = rows[0] as TemplateRow;
  await client.query({
    name: 'template-api-insert-version',
    text: `INSERT INTO template_versions (template_id, version, subject, html, text, variables_schema, created_at)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, now())`,
    values: [row.id, updated.latestVersion, content.subject, content.html, content.text, content.variablesSchemaJson],
  });
  return updated;
}

/** Makes a recorded version the one sends use, and the template active; undefined when the template has no such version. */
export async function activateVersion(client: PoolClient, row: TemplateRow, version: number): Promise<TemplateRow | undefined> {
  const { rows } = await client.query<TemplateRow>({
    name: 'template-api-activate',
    text: `UPDATE templates
              SET (subject, html, text, variables_schema, version) =
                    (SELECT v.subject, v.html, v.text, v.variables_schema, v.version FROM template_versions v WHERE v.template_id = $1 AND v.version = $2),
                  active = true, updated_at = now()
            WHERE id = $1 AND EXISTS (SELECT 1 FROM template_versions v WHERE v.template_id = $1 AND v.version = $2)
            RETURNING ${columns}`,
    values: [row.id, version],
  });
  return rows[0];
}

/**
 * Deletes the template for sends and reads and frees its slug. The row stays, inactive: messages reference it, their
 * view reads its versions, and a failed one re-queued from the dead letters is skipped as its template is inactive.
 */
export async function deleteTemplate(client: PoolClient, row: TemplateRow): Promise<void> {
  await client.query({ name: 'template-api-delete', text: 'UPDATE templates SET deleted_at = now(), active = false WHERE id = $1', values: [row.id] });
}

export interface VersionRow {
  readonly version: number;
  readonly subject: string;
  readonly html: string;
  readonly text: string;
  readonly variablesSchema: AnySchemaObject | null;
  readonly createdAt: Date;
}

/** The template's versions, newest first, without their content. */
export async function listVersions(pool: Pool, templateId: number): Promise<Pick<VersionRow, 'version' | 'createdAt'>[]> {
  const { rows } = await pool.query<VersionRow>({
    name: 'template-api-versions',
    text: 'SELECT version, created_at AS "createdAt" FROM template_versions WHERE template_id = $1 ORDER BY version DESC',
    values: [templateId],
  });
  return rows;
}

export async function findVersion(pool: Pool, templateId: number, version: number): Promise<VersionRow | undefined> {
  const { rows } = await pool.query<VersionRow>({
    name: 'template-api-version',
    text: `SELECT version, subject, html, text, variables_schema AS "variablesSchema", created_at AS "createdAt"
             FROM template_versions WHERE template_id = $1 AND version = $2`,
    values: [templateId, version],
  });
  return rows[0];
}
