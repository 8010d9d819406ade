// dispatch-svc's SigningKeyService as the mailer's tests need it, served in-process over gRPC: each domain answers what
// the test set (a sealed key, or a failure), a domain it did not set has no key (domain_not_found), and every call is
// recorded.
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer, UserError } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import { type dispatch, dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';

const token = 'internal-token-for-signing-key-tests';

export interface FakeSigningKeys {
  /** What DkimKeys fetches with: GetSigningKey over the wire. */
  readonly fetch: (request: dispatch.GetSigningKeyRequest) => Promise<dispatch.SigningKey__Output>;
  /** The domain of every call, in order. */
  readonly asked: string[];
  /** Answers `domain` with `privateKey`, sealed as dispatch-svc seals it (under `dkim:<context domain>`). */
  serveKey(domain: string, privateKey: string, options?: { selector?: string; sealedFor?: string }): void;
  /** Answers `domain` by calling `answer` (which may throw, as a failing dispatch-svc does). */
  serve(domain: string, answer: () => dispatch.SigningKey__Output): void;
  /** Answers `domain` that it has no key (domain_not_found). */
  remove(domain: string): void;
  /** Holds every answer back until the returned function is called. */
  hold(): () => void;
  close(): Promise<void>;
}

export async function startFakeSigningKeys(dataKey: DataKey): Promise<FakeSigningKeys> {
  const answers = new Map<string, () => dispatch.SigningKey__Output>();
  const asked: string[] = [];
  let held: Promise<void> | undefined;
  const server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('signing-keys-test') });
  server.add(
    dispatchProto.SigningKeyService.service,
    {
      GetSigningKey: async (request) => {
        asked.push(request.domain);
        await held;
        const answer = answers.get(request.domain);
        if (!answer) throw new UserError(status.NOT_FOUND, 'domain_not_found', `${request.domain} has no DKIM key`);
        return answer();
      },
    },
    [{ name: 'mailer', token }],
  );
  const port = await server.listen(0, '127.0.0.1');
  const client = new GrpcClient(dispatchProto.SigningKeyService.service, `127.0.0.1:${port}`, { token, deadlineMs: 2_000 });
  return {
    fetch: (request) => client.call('GetSigningKey', request),
    asked,
    serveKey(domain, privateKey, { selector = 'notify', sealedFor = domain } = {}) {
      answers.set(domain, () => ({ domain, selector, sealedPrivateKey: dataKey.seal(privateKey, `dkim:${sealedFor}`) }));
    },
    serve: (domain, answer) => void answers.set(domain, answer),
    remove: (domain) => void answers.delete(domain),
    hold() {
      let release = (): void => {};
      held = new Promise((resolve) => {
        release = () => {
          held = undefined;
          resolve();
        };
      });
      return release;
    },
    async close() {
      client.close();
      await server.close(1_000);
    },
  };
}
