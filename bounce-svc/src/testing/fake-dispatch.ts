// dispatch-svc's ReportService as the receiver's tests need it: every call recorded, every report applied.
import { createRegistry, GrpcClient, GrpcServer } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import type { ReportClient } from '../reports/report-handler.ts';

const token = 'internal-token-for-tests';

export interface FakeDispatch {
  /** host:port, and the token bounce-svc calls with. */
  readonly address: string;
  readonly token: string;
  readonly client: ReportClient;
  /** The messageId of every ApplyReport, in order. */
  readonly applied: number[];
  close(): Promise<void>;
}

export async function startFakeDispatch(): Promise<FakeDispatch> {
  const applied: number[] = [];
  const server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('dispatch-test') });
  server.add(
    dispatchProto.ReportService.service,
    {
      ApplyReport: async (request) => {
        applied.push(Number(request.messageId));
        return { state: 'bounced', changed: true };
      },
      Unsubscribe: async () => ({ maskedAddress: 'a***@example.com', suppressed: true, changed: true }),
    },
    [{ name: 'bounce', token }],
  );
  const address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  const client = new GrpcClient(dispatchProto.ReportService.service, address, { token, deadlineMs: 2_000 });
  return {
    address,
    token,
    client,
    applied,
    close: async () => {
      client.close();
      await server.close(1_000);
    },
  };
}
