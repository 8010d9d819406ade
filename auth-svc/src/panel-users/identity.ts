// What a panel user is identified by: an email address, compared lower-cased, and a role.
import { type PanelRole, panelRoles } from './panel-user-store.ts';

// One address: no spaces, no control characters, one @ with something on both sides. Operators type these; the
// panel never sends mail to them, so a stricter check would only refuse addresses people really use.
const emailPattern = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

/** The form stored and looked up: trimmed, lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function emailProblem(normalized: string): string | undefined {
  if (normalized.length === 0) return 'must not be empty';
  if (normalized.length > 254) return 'must be at most 254 characters';
  if (!emailPattern.test(normalized)) return 'must be one email address';
  return undefined;
}

export function isPanelRole(value: string): value is PanelRole {
  return (panelRoles as readonly string[]).includes(value);
}
