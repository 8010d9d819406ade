// An endpoint's signing secrets as the claim reads them from webhook_endpoints: sealed by dispatch-svc with
// NOTIFY_DATA_KEY under the endpoint's id (`v1.…`), or still in clear (`whsec_…`) on a row written before secrets were
// sealed, until dispatch-svc seals it. Opened here, just before signing; never logged.
import { type DataKey, webhookSecretSealContext } from '@notify/platform/mail';
import { secretPrefix } from './signature.ts';

/** The secrets to sign with, in the order given; throws, naming the endpoint, when one does not open under its id. */
export function openSecrets(dataKey: DataKey, endpointId: number, stored: readonly string[]): string[] {
  return stored.map((secret) => {
    if (secret.startsWith(secretPrefix)) return secret;
    try {
      return dataKey.open(secret, webhookSecretSealContext(endpointId));
    } catch (error) {
      throw new Error(`the signing secret of webhook endpoint ${endpointId} does not open with NOTIFY_DATA_KEY`, { cause: error });
    }
  });
}
