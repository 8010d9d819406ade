// Fault injection for the reliability tests (test/e2e/reliability-*.test.ts): a crash at the one point a test cannot
// reach with a signal from outside. Refused unless NODE_ENV=test, so a production deployment cannot enable it.

export const mailerTestFaults = ['none', 'exit-after-send'] as const;
export type MailerTestFault = (typeof mailerTestFaults)[number];

/** Throws when a fault is asked for outside tests; main.ts calls it before anything starts. */
export function assertTestFaultAllowed(fault: MailerTestFault, nodeEnv: string): void {
  if (fault !== 'none' && nodeEnv !== 'test') {
    throw new Error(`NOTIFY_TEST_FAULT=${fault} is a test-only setting and is refused unless NODE_ENV=test`);
  }
}
