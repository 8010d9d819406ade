// ReportService (bounce token; Unsubscribe also the gateway's): bounce-svc reports the bounces and complaints it
// received and the unsubscribes mailed to it; the gateway reports one-click unsubscribes (RFC 8058). Checks the request, then report-store.ts persists it.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type DataKey, readUnsubscribeToken } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import { applyRecipientReport, applyUnsubscribe, isSuppressed, type RecipientReport } from './report-store.ts';

export interface ReportDeps {
  readonly pool: Pool;
  readonly dataKey: DataKey;
  readonly metrics: Pick<DispatchMetrics, 'suppressions' | 'recipientReports'>;
}

/** The suppressions each kind of report may call for: a bounce never files a complaint, nor the reverse. */
const allowedSuppressions: Readonly<Record<RecipientReport['kind'], readonly string[]>> = {
  bounced: ['', 'hard_bounce'],
  complained: ['', 'complaint'],
};
const unsubscribeSources = ['one_click', 'mailto', 'page'];
const maxDetailLength = 1_000;

function invalid(faults: string[]): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
}

function readReport(request: dispatch.RecipientReport__Output): RecipientReport {
  const faults: string[] = [];
  if (!Number.isSafeInteger(request.messageId) || request.messageId < 1) faults.push('message_id: must be a positive integer');
  const kind = request.kind === 'bounced' || request.kind === 'complained' ? request.kind : undefined;
  if (!kind) faults.push('kind: must be bounced or complained');
  else if (!allowedSuppressions[kind].includes(request.suppression)) {
    faults.push(`suppression: must be ${allowedSuppressions[kind].map((each) => each || 'empty').join(' or ')} for a ${kind} report`);
  }
  if (request.smtpCode !== 0 && (request.smtpCode < 200 || request.smtpCode > 599)) faults.push('smtp_code: must be an SMTP reply code (200-599) or 0');
  const receivedAt = request.receivedAt === '' ? new Date() : new Date(request.receivedAt);
  if (Number.isNaN(receivedAt.getTime())) faults.push('received_at: must be an RFC 3339 time');
  if (faults.length > 0 || !kind) throw invalid(faults);
  // A report's text comes from whoever wrote the DSN: bounded, and without control characters, before it is stored.
  const detail = request.detail
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim()
    .slice(0, maxDetailLength);
  return {
    messageId: request.messageId,
    kind,
    suppression: request.suppression === 'hard_bounce' || request.suppression === 'complaint' ? request.suppression : undefined,
    detail: detail === '' ? `${kind} (no detail given)` : detail,
    smtpCode: request.smtpCode === 0 ? undefined : request.smtpCode,
    receivedAt: receivedAt.toISOString(),
  };
}

/** "a***@example.com": enough for the recipient to recognise the address, not enough for a passer-by to learn it. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return '***';
  const local = address.slice(0, at);
  return `${[...local].slice(0, 1).join('')}***@${address.slice(at + 1)}`;
}

export function reportServiceHandlers(deps: ReportDeps): AsyncHandlers<dispatch.ReportServiceDefinition> {
  return {
    async ApplyReport(request) {
      const report = readReport(request);
      const outcome = await applyRecipientReport(deps.pool, deps.dataKey, report);
      if (!outcome.found) throw new UserError(status.NOT_FOUND, 'message_not_found', `no message ${report.messageId}`);
      if (outcome.early) {
        throw new UserError(status.ABORTED, 'report_early', `message ${report.messageId} is ${outcome.state}, not sent yet: report it again later`);
      }
      if (outcome.changed) deps.metrics.recipientReports.inc({ kind: report.kind, suppression: report.suppression ?? 'none' });
      if (outcome.suppressed && report.suppression) deps.metrics.suppressions.inc({ reason: report.suppression });
      return { state: outcome.state, changed: outcome.changed };
    },

    async Unsubscribe(request) {
      if (!unsubscribeSources.includes(request.source)) throw invalid([`source: must be one of ${unsubscribeSources.join(', ')}`]);
      const claim = readUnsubscribeToken(deps.dataKey, request.token);
      if (!claim) throw new UserError(status.INVALID_ARGUMENT, 'invalid_token', 'the unsubscribe link is not valid');
      const maskedAddress = maskAddress(claim.address);
      if (request.dryRun) return { maskedAddress, suppressed: await isSuppressed(deps.pool, deps.dataKey, claim.projectId, claim.address), changed: false };
      try {
        const outcome = await applyUnsubscribe(deps.pool, deps.dataKey, { ...claim, source: request.source });
        if (outcome.changed) deps.metrics.suppressions.inc({ reason: 'unsubscribed' });
        return { maskedAddress, ...outcome };
      } catch (error) {
        // suppressions.project_id references projects: a signed token of a project since deleted.
        if ((error as { code?: unknown }).code === '23503')
          throw new UserError(status.INVALID_ARGUMENT, 'invalid_token', 'the unsubscribe link is no longer valid', { cause: error });
        throw error;
      }
    },
  };
}
