// Rows of the auth tables as the admin API returns them. Timestamps are ISO-8601, '' when unset; no secret ever leaves here.
import { status } from '@grpc/grpc-js';
import { formatRetention, UserError } from '@notify/platform';
import type { auth } from '@notify/proto';
import { isTestPrefix } from '../keys/api-key.ts';

export function isoTimestamp(value: Date | null): string {
  return value ? value.toISOString() : '';
}

export function notFound(what: string, id: number): UserError {
  return new UserError(status.NOT_FOUND, 'not_found', `${what} ${id} does not exist`);
}

export interface PlanRow {
  id: number;
  name: string;
  suspended: boolean;
  monthly_quota: number;
  created_at: Date;
}
export const planColumns = 'id, name, suspended, monthly_quota, created_at';
export const toPlan = (row: PlanRow): auth.Plan__Output => ({
  id: row.id,
  name: row.name,
  suspended: row.suspended,
  monthlyQuota: row.monthly_quota,
  createdAt: isoTimestamp(row.created_at),
});

export interface OrganizationRow {
  id: number;
  name: string;
  plan_id: number;
  created_at: Date;
  /** NULL: the deployment's NOTIFY_MESSAGE_RETENTION. */
  message_retention_hours: number | null;
}
export const organizationColumns = 'id, name, plan_id, created_at, message_retention_hours';
export const toOrganization = (row: OrganizationRow): auth.Organization__Output => ({
  id: row.id,
  name: row.name,
  planId: row.plan_id,
  createdAt: isoTimestamp(row.created_at),
  messageRetention: row.message_retention_hours === null ? '' : formatRetention(row.message_retention_hours),
});

export interface ProjectRow {
  id: number;
  organization_id: number;
  name: string;
  created_at: Date;
}
export const projectColumns = 'id, organization_id, name, created_at';
export const toProject = (row: ProjectRow): auth.Project__Output => ({
  id: row.id,
  organizationId: row.organization_id,
  name: row.name,
  createdAt: isoTimestamp(row.created_at),
});

export interface ApiKeyRow {
  id: number;
  project_id: number;
  name: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  send_rate: string | null;
  scopes: string[];
  from_domains: string[];
}
// secret_hash is deliberately absent: it is read only by the Authorize lookup.
export const apiKeyColumns = 'id, project_id, name, prefix, created_at, revoked_at, last_used_at, send_rate, scopes, from_domains';
export const toApiKey = (row: ApiKeyRow): auth.ApiKey__Output => ({
  id: row.id,
  projectId: row.project_id,
  name: row.name,
  prefix: row.prefix,
  createdAt: isoTimestamp(row.created_at),
  revokedAt: isoTimestamp(row.revoked_at),
  lastUsedAt: isoTimestamp(row.last_used_at),
  test: isTestPrefix(row.prefix),
  sendRate: row.send_rate ?? '',
  scopes: row.scopes,
  fromDomains: row.from_domains,
});
