// PanelService.GetMessageView: a message with its timeline and its subject, rendered by the renderer mailers send with
// (@notify/templating) from the template version the message was accepted with (template_versions) and its data.
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import { getMessage } from '../messages/queries.ts';

interface SubjectSource {
  data: Record<string, unknown>;
  slug: string;
  version: number;
  /** Null when the version predates template_versions: its content was never kept. */
  subject: string | null;
}

async function renderSubject(pool: Pool, renderer: Renderer, projectId: number, messageId: number): Promise<{ subject: string; error: string }> {
  const found = await pool.query<SubjectSource>({
    name: 'panel-message-subject',
    text: `SELECT m.data, m.template_slug AS slug, m.template_version AS version, v.subject
             FROM messages m
             LEFT JOIN template_versions v ON v.template_id = m.template_id AND v.version = m.template_version
            WHERE m.id = $1`,
    values: [messageId],
  });
  const source = found.rows[0];
  if (!source) return { subject: '', error: 'the message no longer exists' };
  if (source.subject === null) return { subject: '', error: `the content of version ${source.version} of "${source.slug}" was not kept` };
  try {
    const rendered = await renderer.render({
      projectId,
      // Only the subject is wanted: the other parts render as empty strings.
      template: { slug: source.slug, version: source.version, subject: source.subject, html: '', text: '' },
      data: source.data,
    });
    return { subject: rendered.subject, error: '' };
  } catch (error) {
    return { subject: '', error: error instanceof Error ? error.message : String(error) };
  }
}

export async function getMessageView(pool: Pool, renderer: Renderer, request: dispatch.GetMessageViewRequest__Output): Promise<dispatch.MessageView__Output> {
  // Another organization's message is indistinguishable from one that does not exist, like another project's.
  const message = await getMessage(pool, { projectId: request.projectId, organizationId: request.organizationId, messageId: request.messageId });
  const subject = await renderSubject(pool, renderer, request.projectId, message.id);
  return { message, renderedSubject: subject.subject, subjectError: subject.error };
}
