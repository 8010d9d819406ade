// Plans: a monthly quota (0 = unlimited) and a suspension switch, shared by the organizations on them.
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { notFound, type PlanRow, planColumns, toPlan } from './records.ts';
import { Checks } from './validation.ts';

type PlanHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreatePlan' | 'UpdatePlan' | 'ListPlans'>;

export function createPlanHandlers({ pool, invalidation }: AdminDependencies): PlanHandlers {
  return {
    async CreatePlan(request) {
      const checks = new Checks();
      const name = checks.name('name', request.name, 100);
      const quota = checks.quota('monthly_quota', request.monthlyQuota);
      checks.done();
      return translateConstraints(
        async () => {
          const { rows } = await pool.query<PlanRow>(`INSERT INTO plans (name, monthly_quota, suspended) VALUES ($1, $2, $3) RETURNING ${planColumns}`, [
            name,
            quota,
            request.suspended,
          ]);
          return toPlan(rows[0] as PlanRow);
        },
        { duplicate: `a plan named "${name}" already exists` },
      );
    },

    async UpdatePlan(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      const quota = request.monthlyQuota === undefined ? null : checks.quota('monthly_quota', request.monthlyQuota);
      const suspended = request.suspended ?? null;
      if (quota === null && suspended === null) checks.fault('set monthly_quota, suspended or both');
      checks.done();
      const { rows } = await pool.query<PlanRow>(
        `UPDATE plans
            SET monthly_quota = COALESCE($2, monthly_quota), suspended = COALESCE($3, suspended), updated_at = now()
          WHERE id = $1
      RETURNING ${planColumns}`,
        [id, quota, suspended],
      );
      const row = rows[0];
      if (!row) throw notFound('plan', id);
      // Cached keys carry their plan's state: every replica must read it again, at once.
      await invalidation.invalidateAll();
      return toPlan(row);
    },

    async ListPlans() {
      const { rows } = await pool.query<PlanRow>(`SELECT ${planColumns} FROM plans ORDER BY id`);
      return { plans: rows.map(toPlan) };
    },
  };
}
