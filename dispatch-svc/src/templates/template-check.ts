// Step 3 of a send (the contract's checks 12-13): its template, active, with data that satisfies its declared variables,
// and a job (data and template) small enough for JetStream; one lookup for the whole batch.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { PoolClient } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { BatchVerdicts } from '../messages/batch-verdicts.ts';
import type { SendInput } from '../messages/send-request.ts';
import { jobContentBytes } from '../outbox/delivery-job.ts';
import { findTemplates, type TemplateRow, templateKey } from './template-store.ts';
import { encodeViolation, type VariablesSchemas } from './variables-schema.ts';

export interface TemplateCheckDeps {
  readonly schemas: VariablesSchemas;
  /** Largest data and template texts one job may carry (jobContentLimit of the NATS server's max_payload). */
  readonly maxJobContentBytes: number;
}

/** Each open send's template, by the send's index in the batch; the sends that cannot use theirs are refused. */
export async function judgeTemplates(client: PoolClient, batch: BatchVerdicts, deps: TemplateCheckDeps): Promise<Map<number, TemplateRow>> {
  const templateOf = new Map<number, TemplateRow>();
  const open = batch.open();
  if (open.length === 0) return templateOf;
  const wanted = new Map(
    open.map((index) => {
      const { projectId, template } = batch.send(index).request;
      return [templateKey(projectId, template), { projectId, slug: template }];
    }),
  );
  const templates = await findTemplates(client, [...wanted.values()]);
  for (const index of open) {
    const { request, input } = batch.send(index);
    const template = templates.get(templateKey(request.projectId, request.template));
    const refusal = refuseTemplate(deps, request, input, template);
    if (refusal) batch.refuse(index, refusal);
    else if (template) templateOf.set(index, template);
  }
  return templateOf;
}

/** Why a send cannot use its template, if it cannot. */
function refuseTemplate(
  deps: TemplateCheckDeps,
  request: dispatch.SendRequest__Output,
  input: SendInput,
  template: TemplateRow | undefined,
): UserError | undefined {
  if (!template) return new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.template}" in this project`);
  if (!template.active) return new UserError(status.FAILED_PRECONDITION, 'template_inactive', `template "${request.template}" is not active`);
  const violations = deps.schemas.violations(template, input.data);
  if (violations.length === 0)
    return jobContentBytes(request.dataJson, template) > deps.maxJobContentBytes ? messageTooLarge(deps.maxJobContentBytes) : undefined;
  // Structured, so that the gateway can tell the caller in its own language.
  const fields = violations.map(encodeViolation);
  return new UserError(status.INVALID_ARGUMENT, 'data_invalid', `data does not match the variables of template "${template.slug}"`, { fields });
}

/** The message's job would not fit in a JetStream message; the limit goes to the gateway to be put in words. */
function messageTooLarge(limit: number): UserError {
  return new UserError(status.RESOURCE_EXHAUSTED, 'payload_too_large', `the message's data and template come to more than the ${limit} bytes a job may carry`, {
    fields: [String(limit)],
  });
}
