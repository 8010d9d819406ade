// An API key as auth-svc answers it, for the tests of what shows keys (the panel, notifyctl): a live key of project 3
// without a limit, `fields` changed.
import type { auth } from '@notify/proto';

export const apiKeyRecord = (fields: Partial<auth.ApiKey__Output> = {}): auth.ApiKey__Output => ({
  id: 12,
  projectId: 3,
  name: 'news',
  prefix: 'nk_0123456789abcdef',
  createdAt: '2026-12-01T10:00:00.000Z',
  revokedAt: '',
  lastUsedAt: '',
  test: false,
  sendRate: '',
  scopes: ['send', 'messages:read'],
  fromDomains: [],
  ...fields,
});
