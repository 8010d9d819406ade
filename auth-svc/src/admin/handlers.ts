// The whole AuthAdminService: one object, so a method missing from the contract fails to compile.
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { createPanelUserAdminHandlers } from '../panel-users/panel-user-admin.ts';
import { createApiKeyHandlers } from './api-keys.ts';
import type { AdminDependencies } from './dependencies.ts';
import { createOrganizationHandlers } from './organizations.ts';
import { createPlanHandlers } from './plans.ts';
import { createProjectHandlers } from './projects.ts';

export function createAdminHandlers(deps: AdminDependencies): AsyncHandlers<auth.AuthAdminServiceDefinition> {
  return {
    ...createPlanHandlers(deps),
    ...createOrganizationHandlers(deps),
    ...createProjectHandlers(deps),
    ...createApiKeyHandlers(deps),
    ...createPanelUserAdminHandlers(deps),
  };
}
