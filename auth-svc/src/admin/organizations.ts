// Organizations: the tenant named by X-Organization-ID, on one plan, with its own message retention if it has one.
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { notFound, type OrganizationRow, organizationColumns, toOrganization } from './records.ts';
import { Checks } from './validation.ts';

type OrganizationHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreateOrganization' | 'UpdateOrganization' | 'ListOrganizations'>;

export function createOrganizationHandlers({ pool }: AdminDependencies): OrganizationHandlers {
  return {
    async CreateOrganization(request) {
      const checks = new Checks();
      const name = checks.name('name', request.name, 200);
      const planId = checks.id('plan_id', request.planId);
      checks.done();
      return translateConstraints(
        async () => {
          const { rows } = await pool.query<OrganizationRow>(`INSERT INTO organizations (name, plan_id) VALUES ($1, $2) RETURNING ${organizationColumns}`, [
            name,
            planId,
          ]);
          return toOrganization(rows[0] as OrganizationRow);
        },
        { duplicate: `an organization named "${name}" already exists`, missing: `plan ${planId} does not exist` },
      );
    },

    async UpdateOrganization(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      if (request.messageRetention === undefined) checks.fault('set message_retention');
      const retentionHours = checks.retention('message_retention', request.messageRetention ?? '');
      checks.done();
      // dispatch-svc's purge reads the column at each pass: nothing to announce.
      const { rows } = await pool.query<OrganizationRow>(
        `UPDATE organizations SET message_retention_hours = $2 WHERE id = $1 RETURNING ${organizationColumns}`,
        [id, retentionHours],
      );
      const row = rows[0];
      if (!row) throw notFound('organization', id);
      return toOrganization(row);
    },

    async ListOrganizations() {
      const { rows } = await pool.query<OrganizationRow>(`SELECT ${organizationColumns} FROM organizations ORDER BY id`);
      return { organizations: rows.map(toOrganization) };
    },
  };
}
