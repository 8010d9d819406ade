// How PostgreSQL planned a session's prepared statements (pg_prepared_statements is per session: ask on the
// connection that ran them, or on a pool of one connection): for each name, how many executions used the generic plan
// and how many a custom one.
export interface PlanCounts {
  readonly generic: number;
  readonly custom: number;
}

type Session = { query: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }> };

/**
 * PostgreSQL plans a prepared statement for its values five times before it weighs the generic plan against them; a
 * batched statement whose generic plan looks dearer (an unnest of array parameters is assumed ten rows long) would
 * then be planned anew at every execution. Six rounds of warm-up, so every statement has been weighed.
 */
const warmUpRounds = 6;
const measuredRounds = 4;

async function preparedPlans(session: Session, namePrefixes: readonly string[]): Promise<Record<string, PlanCounts>> {
  const found = await session.query(
    `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
      WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS prefix WHERE starts_with(name, prefix)) ORDER BY name`,
    [namePrefixes],
  );
  return Object.fromEntries((found.rows as Array<{ name: string } & PlanCounts>).map((row) => [row.name, { generic: row.generic, custom: row.custom }]));
}

/**
 * Runs `rounds(warm-up)`, then `rounds(4)` on `session`, and returns how the executions of the statements named with
 * one of `namePrefixes` were planned in the last four rounds: statements planned once per connection show only
 * generic plans there.
 */
export async function plannedAfterWarmUp(
  session: Session,
  namePrefixes: readonly string[],
  rounds: (count: number) => Promise<void>,
): Promise<Record<string, PlanCounts>> {
  await rounds(warmUpRounds);
  const before = await preparedPlans(session, namePrefixes);
  await rounds(measuredRounds);
  const after = await preparedPlans(session, namePrefixes);
  return Object.fromEntries(
    Object.entries(after).map(([name, counts]) => [
      name,
      { generic: counts.generic - (before[name]?.generic ?? 0), custom: counts.custom - (before[name]?.custom ?? 0) },
    ]),
  );
}
