// How PostgreSQL planned a session's prepared statements (pg_prepared_statements is per session: ask on the
// connection that ran them): for each name, how many executions used the generic plan and how many a custom one.
export interface PlanCounts {
  readonly generic: number;
  readonly custom: number;
}

export async function preparedPlans(session: { query: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }> }, namePrefix: string): Promise<Record<string, PlanCounts>> {
  const found = await session.query(
    'SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE starts_with(name, $1) ORDER BY name',
    [namePrefix],
  );
  return Object.fromEntries((found.rows as Array<{ name: string } & PlanCounts>).map((row) => [row.name, { generic: row.generic, custom: row.custom }]));
}

/** The executions of each statement between two readings, as planned. */
export function plannedSince(before: Record<string, PlanCounts>, after: Record<string, PlanCounts>): Record<string, PlanCounts> {
  return Object.fromEntries(
    Object.entries(after).map(([name, counts]) => [name, { generic: counts.generic - (before[name]?.generic ?? 0), custom: counts.custom - (before[name]?.custom ?? 0) }]),
  );
}
