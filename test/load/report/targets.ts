// Issue 7's and issue 14's targets, each judged against one figure of the run. A miss is reported with how far off it is; it does
// not fail the bench (only a 5xx or a lost message does).

export interface Target {
  /** As printed: ">= 3,000/s", "<= 25 ms", ">= 0.80". */
  readonly text: string;
  readonly pass: (value: number) => boolean;
  /** How far a value is from the target, e.g. "-41%". */
  readonly gap: (value: number) => string;
}

const percent = (fraction: number): string => `${fraction >= 0 ? '+' : ''}${Math.round(fraction * 100)}%`;

export function atLeast(threshold: number, text: string): Target {
  return { text: `>= ${text}`, pass: (value) => value >= threshold, gap: (value) => percent(value / threshold - 1) };
}

export function atMost(threshold: number, text: string): Target {
  return { text: `<= ${text}`, pass: (value) => value <= threshold, gap: (value) => percent(value / threshold - 1) };
}

export const targets = {
  ingestPerSecond: atLeast(3_000, '3,000/s'),
  ingestOfCeiling: atLeast(0.2, '0.20'),
  endToEndOfRaw: atLeast(0.6, '0.60'),
  acceptP99AtHalfSustainedMs: atMost(25, '25 ms'),
  queuedToSentP99AtHalfSustainedMs: atMost(1_000, '1 s'),
  deliveryPerSecond: atLeast(1_500, '1,500/s'),
  deliveryOfRaw: atLeast(0.8, '0.80'),
  scaleOutOfLinear: atLeast(0.9, '0.90'),
  replayP99Ms: atMost(5, '5 ms'),
  replayWhileDrainingP99Ms: atMost(15, '15 ms'),
  /** Every process of the system, the sink excluded, per message accepted and delivered at a fixed rate (issue 54). */
  acceptAndDeliverySignedMs: atMost(2.5, '2.50 ms'),
  acceptAndDeliveryUnsignedMs: atMost(1.6, '1.60 ms'),
  /** Machine CPU (less the machine's other work) per accepted send, per webhook event, per status read. */
  cpuPerRequestMs: atMost(0.5, '0.50 ms'),
  /** The accept path's same-run form: at least 0.2 x the bare Koa ceiling, so at most 5 x its CPU per request. */
  acceptCpuOfCeiling: atMost(5, '5.00'),
};

export type Verdict = 'pass' | 'MISS' | '';

export function judge(target: Target | undefined, value: number | undefined): { verdict: Verdict; gap: string } {
  if (target === undefined || value === undefined || !Number.isFinite(value)) return { verdict: '', gap: '' };
  return target.pass(value) ? { verdict: 'pass', gap: '' } : { verdict: 'MISS', gap: target.gap(value) };
}
