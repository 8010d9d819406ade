// notifyctl webhook: a project's webhook endpoints (WebhookAdminService, admin token): create one (its signing secret
// is shown once), list, disable, enable, delete, rotate its secret, read its attempts log and replay an event; and
// `listen`, a local receiver that prints the events it gets and whether their signatures verify.
import type { dispatch } from '@notify/proto';
import { type Flags, UsageError } from '../args.ts';
import { type Column, print } from '../output.ts';
import { listen } from '../webhooks/listener.ts';
import { secretKey } from '../webhooks/signature.ts';
import type { CommandGroup, Context, Prepared } from './command.ts';

const columns: readonly Column<dispatch.Webhook__Output>[] = [
  { header: 'ID', value: (webhook) => webhook.id },
  { header: 'PROJECT', value: (webhook) => webhook.projectId },
  { header: 'URL', value: (webhook) => webhook.url, maxWidth: 60 },
  { header: 'EVENTS', value: (webhook) => webhook.eventTypes.join(','), maxWidth: 120 },
  { header: 'ENABLED', value: (webhook) => webhook.enabled },
  { header: 'DISABLED BECAUSE', value: (webhook) => webhook.disabledReason },
  { header: 'FAILING SINCE', value: (webhook) => webhook.failingSince },
  { header: 'OLD SECRET UNTIL', value: (webhook) => webhook.previousSecretExpiresAt },
  { header: 'CREATED', value: (webhook) => webhook.createdAt },
];

const attemptColumns: readonly Column<dispatch.WebhookAttempt__Output>[] = [
  { header: 'ID', value: (attempt) => attempt.id },
  { header: 'AT', value: (attempt) => attempt.attemptedAt },
  { header: 'EVENT', value: (attempt) => attempt.webhookId },
  { header: 'TYPE', value: (attempt) => attempt.eventType },
  { header: 'MESSAGE', value: (attempt) => attempt.messageId },
  { header: 'ATTEMPT', value: (attempt) => attempt.attempt },
  { header: 'STATUS', value: (attempt) => attempt.statusCode || '' },
  { header: 'MS', value: (attempt) => attempt.latencyMs },
  { header: 'RESPONSE OR ERROR', value: (attempt) => attempt.error || attempt.responseBody, maxWidth: 80 },
];

const idOption = { id: { type: 'string', value: 'ID', required: true, description: 'webhook endpoint id (see: notifyctl webhook list)' } } as const;

/** `--events message.sent,message.failed`: the names as given, trimmed; the service says which it does not know. */
function eventTypes(flags: Flags): string[] {
  if (!flags.has('events')) return [];
  const types = flags
    .string('events')
    .split(',')
    .map((type) => type.trim());
  if (types.some((type) => type === ''))
    throw new UsageError(`--events must be event types separated by commas, such as message.sent,message.failed`, flags.command);
  return types;
}

/** `--event evt_42` (the webhook-id header) or `--event 42`. */
function eventId(flags: Flags): number {
  const raw = flags.string('event');
  const digits = /^(?:evt_)?(\d+)$/.exec(raw)?.[1];
  const id = Number(digits);
  if (digits === undefined || !Number.isSafeInteger(id) || id < 1)
    throw new UsageError(`--event must be an event id such as evt_42 (or 42), got '${raw}'`, flags.command);
  return id;
}

function printCreated(io: Context['io'], json: boolean, created: dispatch.CreatedWebhook__Output): void {
  // The warning goes to stderr so that `--json` output and a captured secret stay clean.
  io.stderr('notifyctl: this is the only time the signing secret is shown: it cannot be shown again, store it now.\n');
  if (json) {
    io.stdout(`${JSON.stringify(created, null, 2)}\n`);
    return;
  }
  if (created.webhook) print(io, false, created, columns, [created.webhook]);
  io.stdout(`\nsigning secret: ${created.secret}\n`);
}

function setEnabled(enabled: boolean): (flags: Flags) => Prepared {
  return (flags) => {
    const request = { id: flags.id('id'), enabled };
    return {
      request,
      async execute({ connections, io, json }) {
        const webhook = await connections.webhookAdmin().call('SetWebhookEnabled', request);
        print(io, json, webhook, columns, [webhook]);
      },
    };
  };
}

export const webhookCommands: CommandGroup = {
  name: 'webhook',
  summary: "a project's webhook endpoints: signed event deliveries, their attempts and replays",
  target: 'dispatch',
  commands: [
    {
      name: 'create',
      summary: 'add an endpoint; prints its id and its signing secret (whsec_...) once',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        url: {
          type: 'string',
          value: 'URL',
          required: true,
          description: 'where events are POSTed (https://; http:// only where NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)',
        },
        events: { type: 'string', value: 'TYPE[,TYPE...]', description: 'event types to send, e.g. message.sent,message.failed (default: all six)' },
      },
      prepare(flags) {
        const request = { projectId: flags.id('project'), url: flags.string('url'), eventTypes: eventTypes(flags) };
        return {
          request,
          async execute({ connections, io, json }) {
            printCreated(io, json, await connections.webhookAdmin().call('CreateWebhook', request));
          },
        };
      },
    },
    {
      name: 'list',
      summary: "list a project's endpoints, disabled ones included (never their secrets)",
      options: { project: { type: 'string', value: 'ID', required: true, description: 'project id' } },
      prepare(flags) {
        const request = { projectId: flags.id('project') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.webhookAdmin().call('ListWebhooks', request);
            print(io, json, response, columns, response.webhooks);
          },
        };
      },
    },
    { name: 'disable', summary: 'stop sending to an endpoint (shown as disabled by the operator)', options: idOption, prepare: setEnabled(false) },
    {
      name: 'enable',
      summary: 'send to an endpoint again (also one Notify disabled after a 410 or 5 days of failures)',
      options: idOption,
      prepare: setEnabled(true),
    },
    {
      name: 'delete',
      summary: 'remove an endpoint with its deliveries and attempts log',
      options: idOption,
      prepare(flags) {
        const request = { id: flags.id('id') };
        return {
          request,
          async execute({ connections, io, json }) {
            const webhook = await connections.webhookAdmin().call('DeleteWebhook', request);
            print(io, json, webhook, columns, [webhook]);
          },
        };
      },
    },
    {
      name: 'rotate-secret',
      summary: 'new signing secret, printed once; the old one keeps signing beside it for 24 hours',
      options: idOption,
      prepare(flags) {
        const request = { id: flags.id('id') };
        return {
          request,
          async execute({ connections, io, json }) {
            printCreated(io, json, await connections.webhookAdmin().call('RotateWebhookSecret', request));
          },
        };
      },
    },
    {
      name: 'attempts',
      summary: "an endpoint's attempts, newest first: status code, latency, the start of the response or the error",
      options: {
        ...idOption,
        message: { type: 'string', value: 'ID', description: "only the attempts of this message's events" },
        limit: { type: 'string', value: 'N', description: 'at most N attempts (default 50, up to 500)' },
        before: { type: 'string', value: 'ID', description: 'only attempts with an id lower than this (the next page)' },
      },
      prepare(flags) {
        const request = {
          id: flags.id('id'),
          messageId: flags.optionalId('message') ?? 0,
          limit: flags.optionalInteger('limit', { min: 1, max: 500 }) ?? 50,
          beforeId: flags.optionalId('before') ?? 0,
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.webhookAdmin().call('ListWebhookAttempts', request);
            print(io, json, response, attemptColumns, response.attempts);
            if (!json && response.nextBeforeId > 0) io.stderr(`notifyctl: more attempts: add --before ${response.nextBeforeId}\n`);
          },
        };
      },
    },
    {
      name: 'replay',
      summary: 'send an event again, with the same webhook-id, to every endpoint it went to (or one)',
      options: {
        event: { type: 'string', value: 'ID', required: true, description: 'the event: its webhook-id (evt_42) or number (see: notifyctl webhook attempts)' },
        endpoint: { type: 'string', value: 'ID', description: 'only to this endpoint' },
      },
      prepare(flags) {
        const request = { eventId: eventId(flags), endpointId: flags.optionalId('endpoint') ?? 0 };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.webhookAdmin().call('ReplayWebhookEvent', request);
            if (json) {
              io.stdout(`${JSON.stringify(response, null, 2)}\n`);
              return;
            }
            io.stdout(`evt_${response.eventId} goes out again to endpoint${response.endpointIds.length === 1 ? '' : 's'} ${response.endpointIds.join(', ')}\n`);
          },
        };
      },
    },
    {
      name: 'listen',
      summary: 'receive webhooks on this machine and print each event and whether its signature verifies (until Ctrl-C)',
      options: {
        port: { type: 'string', value: 'N', description: 'port to listen on (default 9000; 0 for a free one)' },
        host: { type: 'string', value: 'ADDRESS', description: 'address to listen on (default 127.0.0.1)' },
        'secret-file': {
          type: 'string',
          value: 'FILE',
          description:
            "the endpoint's signing secret (whsec_...) on the first line of FILE, or - for standard input: verify each request (and answer 401 when it does not verify)",
        },
        secret: { type: 'string', value: 'whsec_...', description: 'refused: a secret on the command line stays in shell history; use --secret-file' },
      },
      async prepare(flags) {
        flags.refuseSecret('secret', 'secret-file');
        const secret = flags.has('secret-file') ? await flags.secretFile('secret-file') : undefined;
        const key = secret === undefined ? undefined : secretKey(secret);
        if (secret !== undefined && key === undefined)
          throw new UsageError('--secret-file must hold a signing secret such as whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', flags.command);
        const options = { port: flags.optionalInteger('port', { min: 0, max: 65_535 }) ?? 9_000, host: flags.optionalString('host') ?? '127.0.0.1' };
        return {
          request: { ...options, verifying: key !== undefined },
          async execute({ io, json }) {
            const listener = await listen({ ...options, key, io, json });
            io.stderr(
              `notifyctl: listening for webhooks on http://${options.host}:${listener.port}/ (${key ? 'verifying signatures' : 'not verifying: add --secret-file'}); Ctrl-C stops\n`,
            );
            await listener.closed;
          },
        };
      },
    },
  ],
};
