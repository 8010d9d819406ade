// Organizations: the tenant named by X-Organization-ID, on one plan.
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { organizationColumns, toOrganization, type OrganizationRow } from './records.ts';
import { Checks } from './validation.ts';

type OrganizationHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreateOrganization' | 'ListOrganizations'>;

export function createOrganizationHandlers({ pool }: AdminDependencies): OrganizationHandlers {
  return {
    async CreateOrganization(request) {
      const checks = new Checks();
      const name = checks.name('name', request.name, 200);
      const planId = checks.id('plan_id', request.planId);
      checks.done();
      return translateConstraints(
        async () => {
          const { rows } = await pool.query<OrganizationRow>(
            `INSERT INTO organizations (name, plan_id) VALUES ($1, $2) RETURNING ${organizationColumns}`,
            [name, planId],
          );
          return toOrganization(rows[0] as OrganizationRow);
        },
        { duplicate: `an organization named "${name}" already exists`, missing: `plan ${planId} does not exist` },
      );
    },

    async ListOrganizations() {
      const { rows } = await pool.query<OrganizationRow>(`SELECT ${organizationColumns} FROM organizations ORDER BY id`);
      return { organizations: rows.map(toOrganization) };
    },
  };
}
