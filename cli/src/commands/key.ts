// notifyctl key: API keys of a project. The full key is shown once, at creation; only its hash is stored. A test key
// (`--test`, prefix `nk_test_`) never mails; `--rate` gives a key its own send rate, applied by every gateway within a second;
// `--scopes` says what it may do (`sending` unless told otherwise: send and read its messages); `--from-domains` limits
// it to sending From some of the organization's sending domains (auth-svc refuses a domain the organization lacks).
import type { auth } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<auth.ApiKey__Output>[] = [
  { header: 'ID', value: (key) => key.id },
  { header: 'PROJECT', value: (key) => key.projectId },
  { header: 'NAME', value: (key) => key.name },
  { header: 'PREFIX', value: (key) => key.prefix },
  { header: 'TEST', value: (key) => key.test },
  { header: 'SCOPES', value: (key) => key.scopes.join(',') },
  { header: 'RATE', value: (key) => key.sendRate || 'default' },
  { header: 'FROM DOMAINS', value: (key) => key.fromDomains.join(',') || 'any' },
  { header: 'CREATED', value: (key) => key.createdAt },
  { header: 'LAST USED', value: (key) => key.lastUsedAt },
  { header: 'REVOKED', value: (key) => key.revokedAt },
];

export const keyCommands: CommandGroup = {
  name: 'key',
  summary: 'API keys of a project (Authorization: Api-Key <key>)',
  target: 'auth',
  commands: [
    {
      name: 'create',
      summary: 'create an API key; prints the key once',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        name: { type: 'string', value: 'NAME', required: true, description: 'a label saying who uses the key' },
        test: {
          type: 'boolean',
          description: 'a test key (prefix nk_test_): its sends run every check and create real messages, but are never mailed nor counted against the quota',
        },
        rate: {
          type: 'string',
          value: 'N/UNIT',
          description: 'its own send rate, e.g. 600/min (units s, m, h, d and their long forms); default: NOTIFY_PUBLIC_SEND_RATE',
        },
        scopes: {
          type: 'string',
          value: 'LIST',
          description:
            'what it may do, comma-separated: send, messages:read, templates:read, templates:write, suppressions:read, suppressions:write, suppressions:reactivate, webhooks:write, domains:write, stats:read, keys:manage, or the presets sending (the default) and full',
        },
        'from-domains': {
          type: 'string',
          value: 'LIST',
          description:
            "limit it to sending From these sending domains of the project's organization, comma-separated (see: notifyctl domain list); default: any of them",
        },
      },
      prepare(flags) {
        const request = {
          projectId: flags.id('project'),
          name: flags.string('name'),
          test: flags.flag('test'),
          sendRate: flags.optionalRate('rate') ?? '',
          scopes: flags.scopes('scopes'),
          fromDomains: flags.list('from-domains'),
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const created = await connections.authAdmin().call('CreateApiKey', request);
            // The warning goes to stderr so that `--json` output and a captured key stay clean.
            io.stderr('notifyctl: this is the only time the API key is shown: it cannot be shown again, store it now.\n');
            if (json) {
              io.stdout(`${JSON.stringify(created, null, 2)}\n`);
              return;
            }
            if (created.key) print(io, false, created, columns, [created.key]);
            io.stdout(`\nAPI key: ${created.apiKey}\n`);
          },
        };
      },
    },
    {
      name: 'update',
      summary: "change an API key's send rate; every gateway applies it within about a second",
      options: {
        id: { type: 'string', value: 'ID', required: true, description: 'key id (see: notifyctl key list)' },
        rate: {
          type: 'string',
          value: 'N/UNIT|default',
          required: true,
          description: 'its own send rate, e.g. 600/min, or default for NOTIFY_PUBLIC_SEND_RATE',
        },
      },
      prepare(flags) {
        const request: auth.UpdateApiKeyRequest = { id: flags.id('id'), sendRate: flags.optionalRate('rate') };
        return {
          request,
          async execute({ connections, io, json }) {
            const key = await connections.authAdmin().call('UpdateApiKey', request);
            print(io, json, key, columns, [key]);
          },
        };
      },
    },
    {
      name: 'revoke',
      summary: 'revoke an API key; it is refused within about a second',
      options: { id: { type: 'string', value: 'ID', required: true, description: 'key id (see: notifyctl key list)' } },
      prepare(flags) {
        const request = { id: flags.id('id') };
        return {
          request,
          async execute({ connections, io, json }) {
            const key = await connections.authAdmin().call('RevokeApiKey', request);
            print(io, json, key, columns, [key]);
          },
        };
      },
    },
    {
      name: 'list',
      summary: 'list the API keys of a project, revoked ones included',
      options: { project: { type: 'string', value: 'ID', required: true, description: 'project id' } },
      prepare(flags) {
        const request = { projectId: flags.id('project') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.authAdmin().call('ListApiKeys', request);
            print(io, json, response, columns, response.keys);
          },
        };
      },
    },
  ],
};
