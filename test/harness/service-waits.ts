// Waiting on the stack's services, bounded: for a process to exit (a test expecting a crash fails with the service's
// last output instead of hanging when the process lives on), and for the gateway to reach a restarted service.
import type { ExitInfo, ServiceName, Stack } from '@notify/cli/local';
import { waitFor } from './wait.ts';

export async function exitOf(stack: Stack, service: ServiceName, index = 0, timeoutMs = 15_000): Promise<ExitInfo> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const label = service === 'mailer-svc' ? `mailer-svc-${index}` : service;
      reject(new Error(`${label} did not exit within ${timeoutMs} ms; its last output:\n${stack.logs.text(label).split('\n').slice(-20).join('\n')}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([stack.exited(service, index), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits until the gateway reaches auth-svc and dispatch-svc again after one of them restarted: its gRPC channel
 * retries a refused connection after a backoff, and fails calls fast meanwhile (503). A send of an unknown template
 * answers 404 once both answer, and creates nothing.
 */
export async function gatewayReachesServices(send: () => Promise<{ status: number }>, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () => {
      const { status } = await send();
      if (status !== 404) throw new Error(`it answers ${status} instead of 404`);
      return true;
    },
    { timeoutMs, what: 'the gateway to reach auth-svc and dispatch-svc again after a restart' },
  );
}
