// An operator erases a recipient from the project (the form at the foot of its overview, behind CSRF): the answer is
// rendered at once, never redirected, so the address travels in no URL. Every call names the user's organization.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { currentProject, type PanelContext, PanelError, signedIn } from '../context.ts';
import { readForm } from '../form.ts';
import { renderPage } from '../render.ts';
import { erasureView } from '../views/erasure.ts';
import { isOperator, verifyCsrf } from './guards.ts';
import { found, type Handler, scope } from './project-pages.ts';

export const eraseRecipient: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const { t } = panel.state;
  const project = currentProject(panel);
  const page = { project, csrfToken: signedIn(panel).session.csrfToken };
  const title = t('erasure.title', { project: project.name });
  try {
    const erasure = await found(deps.dispatch.call('EraseProjectRecipient', { ...scope(panel), address: (form.get('address') ?? '').trim().slice(0, 254) }));
    deps.logger.info(
      { panelUserId: signedIn(panel).access.user.id, projectId: project.id, erased: erasure.messages, requestId: panel.state.requestId },
      'panel recipient erased',
    );
    renderPage(panel, { title, section: 'overview', main: erasureView(t, { ...page, erasure }) });
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)) throw error;
    renderPage(panel, { title, section: 'overview', status: 400, main: erasureView(t, { ...page, notice: { kind: 'error', text: t('erasure.invalid') } }) });
  }
};
