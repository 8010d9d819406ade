// A project's API keys, an operator's new key (with the scopes chosen; its secret shown on the answer, once) and an
// operator's change of one key's send rate: auth-svc stores it and announces the key, so every gateway replica applies
// the new rate within a second. A key of another project or organization is "not found".
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { currentProject, type PanelContext, PanelError, signedIn } from '../context.ts';
import { readForm } from '../form.ts';
import { redirect, renderPage } from '../render.ts';
import { keysView } from '../views/keys.ts';
import type { Notice } from '../views/pages.ts';
import { idParam, isOperator, verifyCsrf } from './guards.ts';
import { found, type Handler, scope } from './project-pages.ts';

async function renderKeys(
  deps: Parameters<Handler>[0],
  panel: PanelContext,
  options: { notice?: Notice; status?: number; created?: { prefix: string; secret: string } } = {},
): Promise<void> {
  const { t } = panel.state;
  const project = currentProject(panel);
  const { keys } = await deps.auth.call('ListPanelApiKeys', scope(panel));
  renderPage(panel, {
    title: t('keys.title', { project: project.name }),
    section: 'keys',
    ...(options.status === undefined ? {} : { status: options.status }),
    main: keysView(t, {
      projectId: project.id,
      project: project.name,
      keys,
      ...(isOperator(panel) ? { csrfToken: signedIn(panel).session.csrfToken } : {}),
      ...(options.notice ? { notice: options.notice } : {}),
      ...(options.created ? { created: options.created } : {}),
    }),
  });
}

/**
 * An operator makes a key with the scopes ticked (none: `sending`) and gets the page with the key on it: the answer is
 * the page itself, not a redirect, so the secret is never in a URL or kept anywhere to show it again.
 */
export const createKey: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const request = { ...scope(panel), name: (form.get('name') ?? '').trim(), scopes: form.getAll('scopes'), test: form.get('test') === 'true' };
  try {
    const created = await found(deps.auth.call('CreatePanelApiKey', request));
    const keyId = created.key?.id ?? 0;
    deps.logger.info(
      { panelUserId: signedIn(panel).access.user.id, keyId, scopes: created.key?.scopes, requestId: panel.state.requestId },
      'panel key created',
    );
    await renderKeys(deps, panel, { created: { prefix: created.key?.prefix ?? '', secret: created.apiKey } });
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)) throw error;
    await renderKeys(deps, panel, { status: 400, notice: { kind: 'error', text: panel.state.t('keys.createInvalid') } });
  }
};

export const keysPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  // After a change (the redirect names the key, never text): which key, and the rate it has now.
  const changed = Number(panel.query.rateChanged);
  let notice: Notice | undefined;
  if (Number.isSafeInteger(changed) && changed > 0) {
    const { keys } = await deps.auth.call('ListPanelApiKeys', scope(panel));
    const key = keys.find((candidate) => candidate.id === changed);
    if (key) notice = { kind: 'info', text: t('keys.rateChanged', { prefix: key.prefix, rate: key.sendRate || t('keys.rateDefault') }) };
  }
  await renderKeys(deps, panel, notice ? { notice } : {});
};

/** An operator sets a key's send rate (`<count>/<unit>`, empty for the default); a malformed one is a 400 with the page. */
export const setKeyRate: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const keyId = idParam(panel, 'keyId');
  const sendRate = (form.get('rate') ?? '').trim();
  try {
    await found(deps.auth.call('SetPanelApiKeyRate', { ...scope(panel), keyId, sendRate }));
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)) throw error;
    await renderKeys(deps, panel, { status: 400, notice: { kind: 'error', text: panel.state.t('keys.rateInvalid') } });
    return;
  }
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, keyId, sendRate, requestId: panel.state.requestId }, 'panel key rate changed');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/keys?rateChanged=${keyId}`);
};
