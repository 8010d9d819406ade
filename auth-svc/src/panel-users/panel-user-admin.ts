// AuthAdminService's panel-user methods (notifyctl panel-user): create, list, set a password, disable.
import type { AsyncHandlers } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { auth } from '@notify/proto';
import { translateConstraints } from '../admin/constraint-errors.ts';
import { notFound } from '../admin/records.ts';
import { Checks } from '../admin/validation.ts';
import { emailProblem, isPanelRole, normalizeEmail } from './identity.ts';
import { disablePanelUser, insertPanelUser, listPanelUsers, type PanelRole, panelRoles, replacePassword, toPanelUser } from './panel-user-store.ts';
import { hashPassword, passwordProblem } from './password.ts';

type PanelUserAdminHandlers = Pick<
  AsyncHandlers<auth.AuthAdminServiceDefinition>,
  'CreatePanelUser' | 'ListPanelUsers' | 'SetPanelUserPassword' | 'DisablePanelUser'
>;

function checkPassword(checks: Checks, password: string): void {
  const problem = passwordProblem(password);
  if (problem) checks.fault(`password: ${problem}`);
}

function checkEmail(checks: Checks, email: string): string {
  const normalized = normalizeEmail(email);
  const problem = emailProblem(normalized);
  if (problem) checks.fault(`email: ${problem}`);
  return normalized;
}

/** Like the other checks, returns the value as given; `checks.done()` throws before an invalid one is used. */
function checkRole(checks: Checks, role: string): PanelRole {
  if (!isPanelRole(role)) checks.fault(`role: must be one of ${panelRoles.join(', ')}`);
  return role as PanelRole;
}

export function createPanelUserAdminHandlers({ pool }: { pool: Pool }): PanelUserAdminHandlers {
  return {
    async CreatePanelUser(request) {
      const checks = new Checks();
      const organizationId = checks.id('organization_id', request.organizationId);
      const email = checkEmail(checks, request.email);
      const role = checkRole(checks, request.role);
      checkPassword(checks, request.password);
      checks.done();
      const password = await hashPassword(request.password);
      const row = await translateConstraints(() => insertPanelUser(pool, { organizationId, email, role, password }), {
        duplicate: `a panel user with the email ${email} already exists`,
        missing: `organization ${organizationId} does not exist`,
      });
      return toPanelUser(row);
    },

    async ListPanelUsers(request) {
      const checks = new Checks();
      const organizationId = checks.id('organization_id', request.organizationId);
      checks.done();
      // An empty list must mean "no panel users", not "no such organization".
      const organization = await pool.query('SELECT 1 FROM organizations WHERE id = $1', [organizationId]);
      if (organization.rowCount === 0) throw notFound('organization', organizationId);
      return { users: (await listPanelUsers(pool, organizationId)).map(toPanelUser) };
    },

    async SetPanelUserPassword(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      checkPassword(checks, request.password);
      checks.done();
      const row = await replacePassword(pool, id, await hashPassword(request.password), true);
      if (!row) throw notFound('panel user', id);
      return toPanelUser(row);
    },

    async DisablePanelUser(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      checks.done();
      const row = await disablePanelUser(pool, id);
      if (!row) throw notFound('panel user', id);
      return toPanelUser(row);
    },
  };
}
