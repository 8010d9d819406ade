// Values NOTIFY_DATA_KEY should protect but does not yet, because they were written before it did or, in a rolling
// upgrade, by a replica of the previous release: webhook signing secrets in clear (sealed here) and erased recipients'
// unkeyed hashes (keyed here). dispatch-svc looks for them at start and every ten minutes.
import { type Logger, type PeriodicTask, runPeriodically } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import { keyUnkeyedErasedAddresses } from './suppressions/suppression-store.ts';
import { sealClearSecrets } from './webhooks/secret-sealing.ts';

const upkeepIntervalMs = 10 * 60_000;

/** One pass now, then one every ten minutes; a failed pass is logged and the next one tries again. */
export function startDataKeyUpkeep(deps: { readonly pool: Pool; readonly dataKey: DataKey; readonly logger: Logger }): PeriodicTask {
  const pass = async (): Promise<void> => {
    const sealed = await sealClearSecrets(deps.pool, deps.dataKey);
    if (sealed > 0) deps.logger.info({ endpoints: sealed }, 'webhook secrets stored in clear sealed');
    const keyed = await keyUnkeyedErasedAddresses(deps.pool, deps.dataKey);
    if (keyed > 0) deps.logger.info({ suppressions: keyed }, 'unkeyed erased addresses replaced by their keyed hash');
  };
  const first = pass().catch((error: unknown) => deps.logger.warn({ err: error, task: 'data key upkeep' }, 'background pass failed'));
  const periodic = runPeriodically('data key upkeep', upkeepIntervalMs, pass, deps.logger);
  return {
    async stop() {
      await Promise.all([first, periodic.stop()]);
    },
  };
}
