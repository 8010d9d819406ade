// notifyctl plan: the plans organizations are on (monthly quota, suspension). Talks to AuthAdminService.
import type { auth } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<auth.Plan__Output>[] = [
  { header: 'ID', value: (plan) => plan.id },
  { header: 'NAME', value: (plan) => plan.name },
  { header: 'MONTHLY QUOTA', value: (plan) => (plan.monthlyQuota === 0 ? 'unlimited' : plan.monthlyQuota) },
  { header: 'SUSPENDED', value: (plan) => plan.suspended },
  { header: 'CREATED', value: (plan) => plan.createdAt },
];

export const planCommands: CommandGroup = {
  name: 'plan',
  summary: 'plans: monthly send quota and suspension of the organizations on them',
  target: 'auth',
  commands: [
    {
      name: 'create',
      summary: 'create a plan',
      options: {
        name: { type: 'string', value: 'NAME', required: true, description: 'unique plan name' },
        'monthly-quota': { type: 'string', value: 'N', description: 'sends allowed per calendar month; 0 (the default) means unlimited' },
        suspended: { type: 'boolean', description: 'create it suspended: organizations on it cannot send' },
      },
      prepare(flags) {
        const request = {
          name: flags.string('name'),
          monthlyQuota: flags.optionalInteger('monthly-quota', { min: 0 }) ?? 0,
          suspended: flags.flag('suspended'),
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const plan = await connections.authAdmin().call('CreatePlan', request);
            print(io, json, plan, columns, [plan]);
          },
        };
      },
    },
    {
      name: 'update',
      summary: 'change the quota or suspension of a plan (flags left out stay as they are)',
      options: {
        id: { type: 'string', value: 'ID', required: true, description: 'plan id' },
        'monthly-quota': { type: 'string', value: 'N', description: 'sends allowed per calendar month; 0 means unlimited' },
        suspended: { type: 'string', value: 'true|false', description: 'suspend or resume every organization on the plan' },
      },
      prepare(flags) {
        const request: auth.UpdatePlanRequest = { id: flags.id('id') };
        const monthlyQuota = flags.optionalInteger('monthly-quota', { min: 0 });
        const suspended = flags.optionalBoolean('suspended');
        if (monthlyQuota !== undefined) request.monthlyQuota = monthlyQuota;
        if (suspended !== undefined) request.suspended = suspended;
        return {
          request,
          async execute({ connections, io, json }) {
            const plan = await connections.authAdmin().call('UpdatePlan', request);
            print(io, json, plan, columns, [plan]);
          },
        };
      },
    },
    {
      name: 'list',
      summary: 'list every plan',
      options: {},
      prepare() {
        return {
          request: {},
          async execute({ connections, io, json }) {
            const response = await connections.authAdmin().call('ListPlans', {});
            print(io, json, response, columns, response.plans);
          },
        };
      },
    },
  ],
};
