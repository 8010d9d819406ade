// Projects: own templates and API keys; names are unique within their organization.
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { notFound, type ProjectRow, projectColumns, toProject } from './records.ts';
import { Checks } from './validation.ts';

type ProjectHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreateProject' | 'ListProjects'>;

export function createProjectHandlers({ pool }: AdminDependencies): ProjectHandlers {
  return {
    async CreateProject(request) {
      const checks = new Checks();
      const organizationId = checks.id('organization_id', request.organizationId);
      const name = checks.name('name', request.name, 200);
      checks.done();
      return translateConstraints(
        async () => {
          const { rows } = await pool.query<ProjectRow>(`INSERT INTO projects (organization_id, name) VALUES ($1, $2) RETURNING ${projectColumns}`, [
            organizationId,
            name,
          ]);
          return toProject(rows[0] as ProjectRow);
        },
        {
          duplicate: `organization ${organizationId} already has a project named "${name}"`,
          missing: `organization ${organizationId} does not exist`,
        },
      );
    },

    async ListProjects(request) {
      const checks = new Checks();
      const organizationId = checks.id('organization_id', request.organizationId);
      checks.done();
      // An empty list must mean "no projects", not "no such organization".
      const organization = await pool.query('SELECT 1 FROM organizations WHERE id = $1', [organizationId]);
      if (organization.rowCount === 0) throw notFound('organization', organizationId);
      const { rows } = await pool.query<ProjectRow>(`SELECT ${projectColumns} FROM projects WHERE organization_id = $1 ORDER BY id`, [organizationId]);
      return { projects: rows.map(toProject) };
    },
  };
}
