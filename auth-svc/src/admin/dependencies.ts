import type { Pool } from '@notify/platform/database';
import type { InvalidationChannel } from '../keys/invalidation.ts';

/** What the admin handlers work with: the database, and the channel that keeps every replica's key cache honest. */
export interface AdminDependencies {
  readonly pool: Pool;
  readonly invalidation: InvalidationChannel;
}
