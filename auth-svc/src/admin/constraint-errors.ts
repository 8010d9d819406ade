// PostgreSQL constraint violations that the caller can fix, turned into UserErrors; anything else passes through untouched.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';

const uniqueViolation = '23505';
const foreignKeyViolation = '23503';

/** Runs `work`; a unique violation becomes ALREADY_EXISTS with `duplicate`, a missing reference NOT_FOUND with `missing`. */
export async function translateConstraints<T>(work: () => Promise<T>, messages: { duplicate: string; missing?: string }): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === uniqueViolation) throw new UserError(status.ALREADY_EXISTS, 'already_exists', messages.duplicate, { cause: error });
    if (code === foreignKeyViolation && messages.missing) throw new UserError(status.NOT_FOUND, 'not_found', messages.missing, { cause: error });
    throw error;
  }
}
