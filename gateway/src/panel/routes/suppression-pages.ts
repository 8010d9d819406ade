// A project's suppression list in the panel: searching it (everyone) and removing an address (operators). Every call
// names the user's organization; another organization's project is "not found".
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { currentProject, type PanelContext, PanelError, signedIn } from '../context.ts';
import { readForm } from '../form.ts';
import { redirect, renderPage } from '../render.ts';
import type { Notice } from '../views/pages.ts';
import { suppressionsView } from '../views/suppressions.ts';
import { isOperator, verifyCsrf } from './guards.ts';
import { found, type Handler, scope } from './project-pages.ts';

const outcomes = ['removed', 'not-listed'] as const;

/** The notice after a removal: the redirect carries the outcome and the address, never text. */
function removalNotice(ctx: PanelContext): Notice | undefined {
  const outcome = ctx.query.removed;
  const address = ctx.query.address;
  if (typeof outcome !== 'string' || !(outcomes as readonly string[]).includes(outcome) || typeof address !== 'string') return undefined;
  const { t } = ctx.state;
  return outcome === 'removed'
    ? { kind: 'info', text: t('suppressions.removed', { address }) }
    : { kind: 'error', text: t('suppressions.notListed', { address }) };
}

export const suppressionsPage: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const { t } = panel.state;
  const project = currentProject(panel);
  // The removal notice names an address too; only a search fills the search box.
  const search = typeof panel.query.address === 'string' && panel.query.removed === undefined ? panel.query.address.slice(0, 254) : '';
  const { suppressions } = await found(deps.dispatch.call('ListProjectSuppressions', { ...scope(panel), search }));
  const notice = removalNotice(panel);
  renderPage(panel, {
    title: t('suppressions.title', { project: project.name }),
    section: 'suppressions',
    main: suppressionsView(t, {
      project,
      search,
      suppressions,
      canRemove: isOperator(panel),
      csrfToken: signedIn(panel).session.csrfToken,
      ...(notice ? { notice } : {}),
    }),
  });
};

export const removeSuppression: Handler = (deps) => async (ctx) => {
  const panel = ctx as PanelContext;
  const form = await readForm(panel);
  verifyCsrf(panel, form);
  if (!isOperator(panel)) throw new PanelError(403, 'error.forbidden', 'error.forbiddenText');
  const address = (form.get('address') ?? '').slice(0, 254);
  let outcome: (typeof outcomes)[number] = 'removed';
  try {
    await deps.dispatch.call('RemoveProjectSuppression', { ...scope(panel), address });
  } catch (error) {
    if (!(error instanceof RemoteError && error.status === status.NOT_FOUND && error.reason === 'suppression_not_found')) throw error;
    outcome = 'not-listed';
  }
  deps.logger.info({ panelUserId: signedIn(panel).access.user.id, outcome, requestId: panel.state.requestId }, 'panel suppression removed');
  redirect(panel, `/panel/projects/${currentProject(panel).id}/suppressions?removed=${outcome}&address=${encodeURIComponent(address)}`);
};
