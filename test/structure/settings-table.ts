// docs/settings.md's settings table, generated from the declarations the services validate their environment with:
// the platform's commonConfig (read by every service) and each service's src/config.ts. `npm run docs:settings`
// rewrites the table; settings-table.test.ts fails when the document's copy differs, so it cannot drift from the code.
//
// The declarations are loaded by path, the way the harness starts the services by path: this tool documents every
// service and belongs to none of them, so no package depends on the others for it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { commonConfig, type Field } from '@notify/platform';

type Spec = Readonly<Record<string, Field<unknown>>>;

export interface ServiceSpec {
  readonly service: string;
  readonly spec: Spec;
}

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const settingsDocPath = join(repoRoot, 'docs', 'settings.md');

/** Each service, the file declaring its environment, and the name of the declaration it passes to runService. */
const declarations: readonly { service: string; file: string; name: string }[] = [
  { service: 'gateway', file: 'gateway/src/config.ts', name: 'configSpec' },
  { service: 'auth-svc', file: 'auth-svc/src/config.ts', name: 'configSpec' },
  { service: 'dispatch-svc', file: 'dispatch-svc/src/config.ts', name: 'configSpec' },
  { service: 'mailer-svc', file: 'mailer-svc/src/config.ts', name: 'mailerConfig' },
  { service: 'webhook-svc', file: 'webhook-svc/src/config.ts', name: 'webhookConfig' },
  { service: 'bounce-svc', file: 'bounce-svc/src/config.ts', name: 'bounceConfig' },
];

export async function loadServiceSpecs(): Promise<ServiceSpec[]> {
  return Promise.all(
    declarations.map(async ({ service, file, name }) => {
      const module = (await import(pathToFileURL(join(repoRoot, file)).href)) as Record<string, Spec | undefined>;
      const spec = module[name];
      if (!spec) throw new Error(`${file} exports no ${name}`);
      return { service, spec };
    }),
  );
}

const begin = '<!-- settings table: generated from the config declarations by `npm run docs:settings`; edit those, not this table -->';
const end = '<!-- end of the settings table -->';

/** A table cell: `|` escaped, and `<`, `>` outside code spans, where `<count>/<unit>` would be read as HTML and vanish. */
export function cell(text: string): string {
  const escaped = text
    .split('`')
    .map((part, index) => (index % 2 === 0 ? part.replace(/</g, '&lt;').replace(/>/g, '&gt;') : part))
    .join('`');
  return escaped.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function defaultCell(field: Field<unknown>): string {
  if (field.default === undefined) return 'required';
  if (field.default === '') return 'empty';
  return `\`${field.default}\``;
}

/**
 * The table: one row per variable, or per variant of it where services declare it differently (GRPC_PORT has a
 * default per service). The variables every service reads come first, then each service's in declaration order.
 */
export function settingsTable(services: readonly ServiceSpec[], common: Spec = commonConfig): string {
  const all = services.map((entry) => entry.service);
  const variants = new Map<string, { field: Field<unknown>; services: string[] }[]>();
  const add = (field: Field<unknown>, readers: readonly string[]): void => {
    const known = variants.get(field.env) ?? [];
    variants.set(field.env, known);
    const same = known.find(
      (variant) => variant.field.default === field.default && variant.field.description === field.description && variant.field.secret === field.secret,
    );
    if (same) same.services.push(...readers.filter((service) => !same.services.includes(service)));
    else known.push({ field, services: [...readers] });
  };
  for (const field of Object.values(common)) add(field, all);
  for (const { service, spec } of services) for (const field of Object.values(spec)) add(field, [service]);

  const rows = [...variants.values()].flat().map(({ field, services: readers }) => {
    const variable = field.secret ? `\`${field.env}\` or \`${field.env}_FILE\`` : `\`${field.env}\``;
    const who = readers.length === all.length ? 'all' : readers.join(', ');
    return `| ${variable} | ${who} | ${cell(defaultCell(field))} | ${cell(field.description)} |`;
  });
  return [begin, '| variable | services | default | meaning |', '|---|---|---|---|', ...rows, end].join('\n');
}

/** The generated table as a document holds it, from its first marker to its last; undefined without the markers. */
export function tableIn(document: string): string | undefined {
  const from = document.indexOf(begin);
  const to = document.indexOf(end);
  return from === -1 || to < from ? undefined : document.slice(from, to + end.length);
}

export function withTable(document: string, table: string): string {
  const current = tableIn(document);
  if (current === undefined) throw new Error(`docs/settings.md has no settings table markers:\n${begin}\n...\n${end}`);
  return document.replace(current, () => table);
}

// `node test/structure/settings-table.ts` rewrites docs/settings.md's table; `--check` only says whether it is up to date.
if (import.meta.main) {
  const document = readFileSync(settingsDocPath, 'utf8');
  const updated = withTable(document, settingsTable(await loadServiceSpecs()));
  if (process.argv.includes('--check')) {
    if (updated !== document) {
      process.stderr.write('docs/settings.md: the settings table differs from the config declarations; run npm run docs:settings\n');
      process.exitCode = 1;
    }
  } else if (updated !== document) {
    writeFileSync(settingsDocPath, updated);
    process.stdout.write('docs/settings.md: settings table rewritten from the config declarations\n');
  } else {
    process.stdout.write('docs/settings.md: settings table already up to date\n');
  }
}
