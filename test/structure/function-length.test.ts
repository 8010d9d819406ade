// No function over 80 lines in code that ships: a function that long does several things, and reads as none of them.
// TypeScript 7 has no JavaScript compiler API, so each file's types are stripped as Node strips them to run it (the
// positions kept), and the JavaScript left is scanned: strings, templates, comments and regular expressions skipped,
// brackets matched, and every function, method and arrow function measured from its first line to its last.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join, relative, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const maxLines = 80;
/** Every workspace of code that ships (test/ is test code). */
const enforced = ['proto', 'platform', 'templating', 'gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'cli'];

interface Token {
  readonly text: string;
  readonly line: number;
}

/** A function: the name it is known by (`(anonymous)` without one), its first line and its length in lines. */
interface FunctionSpan {
  readonly name: string;
  readonly line: number;
  readonly lines: number;
}

/** After these a `/` divides; after anything else it opens a regular expression. */
const endsOperand = /^([\w$#]+|\)|\]|\})$/;
const operatorWords = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);
/** A token of more than one character that matters here: a word, a number, `=>` or `...`. */
const wordPattern = /=>|\.\.\.|[#\w$]+/y;
const notMethodNames = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'function', 'return', 'typeof', 'await', 'new', 'super', 'import']);

/** The JavaScript's tokens, but for the text of strings, templates, comments and regular expressions. */
function tokenize(js: string): Token[] {
  const tokens: Token[] = [];
  /** Per open `{`: whether it opened a template's `${` (its `}` resumes the template). */
  const braces: boolean[] = [];
  let line = 1;
  let at = 0;
  const skipTo = (end: number): void => {
    for (; at < end; at += 1) if (js[at] === '\n') line += 1;
  };
  const quoted = (quote: string): void => {
    let end = at + 1;
    while (end < js.length && js[end] !== quote) end += js[end] === '\\' ? 2 : 1;
    skipTo(end + 1);
  };
  /** From inside a template to its end, or into its next `${`. */
  const template = (): void => {
    let end = at;
    while (end < js.length && js[end] !== '`' && !(js[end] === '$' && js[end + 1] === '{')) end += js[end] === '\\' ? 2 : 1;
    if (js[end] === '`') return skipTo(end + 1);
    braces.push(true);
    skipTo(end + 2);
  };
  const regex = (): void => {
    let end = at + 1;
    let inClass = false;
    while (end < js.length && (inClass || js[end] !== '/')) {
      if (js[end] === '[') inClass = true;
      else if (js[end] === ']') inClass = false;
      end += js[end] === '\\' ? 2 : 1;
    }
    end += 1;
    while (/\w/.test(js[end] ?? '')) end += 1;
    skipTo(end);
  };
  while (at < js.length) {
    const char = js[at] as string;
    const next = js[at + 1];
    if (/\s/.test(char)) skipTo(at + 1);
    else if (char === '/' && next === '/') skipTo(js.indexOf('\n', at) === -1 ? js.length : js.indexOf('\n', at));
    else if (char === '/' && next === '*') skipTo(js.indexOf('*/', at + 2) + 2);
    else if (char === "'" || char === '"') quoted(char);
    else if (char === '`') {
      at += 1;
      template();
    } else if (char === '/') {
      const previous = tokens.at(-1)?.text ?? '';
      if (endsOperand.test(previous) && !operatorWords.has(previous)) {
        tokens.push({ text: '/', line });
        skipTo(at + 1);
      } else regex();
    } else if (char === '}' && braces.at(-1) === true) {
      braces.pop();
      at += 1;
      template();
    } else {
      wordPattern.lastIndex = at;
      const word = wordPattern.exec(js)?.[0] ?? char;
      if (char === '{') braces.push(false);
      if (char === '}') braces.pop();
      tokens.push({ text: word, line });
      skipTo(at + word.length);
    }
  }
  return tokens;
}

/** Each bracket's partner, by token index. */
function partners(tokens: readonly Token[]): Map<number, number> {
  const pairs = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((token, index) => {
    if (token.text === '(' || token.text === '[' || token.text === '{') open.push(index);
    else if (token.text === ')' || token.text === ']' || token.text === '}') {
      const opener = open.pop();
      if (opener === undefined) return;
      pairs.set(opener, index);
      pairs.set(index, opener);
    }
  });
  return pairs;
}

/** The last token of an arrow function's expression body: before the `,` `;` or closing bracket that ends it. */
function expressionEnd(tokens: readonly Token[], pairs: ReadonlyMap<number, number>, first: number): number {
  let index = first;
  for (;;) {
    const text = tokens[index]?.text;
    if (text === undefined || text === ',' || text === ';' || text === ')' || text === ']' || text === '}') return index - 1;
    index = text === '(' || text === '[' || text === '{' ? (pairs.get(index) ?? index) + 1 : index + 1;
  }
}

/** What a function at `start` (its first token) is called: its own name, or the name it is assigned to. */
function nameBefore(tokens: readonly Token[], start: number): string {
  let index = start - 1;
  if (tokens[index]?.text === 'async') index -= 1;
  const [before, name] = [tokens[index]?.text, tokens[index - 1]?.text ?? ''];
  return (before === '=' || before === ':') && /^[#\w$]+$/.test(name) ? name : '(anonymous)';
}

/** Every function, method and arrow function of a TypeScript source, nested ones included, each measured on its own. */
function functionSpans(source: string): FunctionSpan[] {
  const tokens = tokenize(stripTypeScriptTypes(source, { mode: 'strip' }));
  const pairs = partners(tokens);
  const found = new Map<number, FunctionSpan>();
  const add = (key: number, name: string, first: number, last: number): void => {
    const line = tokens[first]?.line ?? 0;
    if (!found.has(key)) found.set(key, { name, line, lines: (tokens[last]?.line ?? line) - line + 1 });
  };
  tokens.forEach((token, index) => {
    const next = tokens[index + 1]?.text;
    if (token.text === 'function') {
      let open = index + 1;
      while (open < tokens.length && tokens[open]?.text !== '(') open += 1;
      const body = (pairs.get(open) ?? open) + 1;
      const own = tokens[open - 1]?.text ?? '';
      const name = /^[#\w$]+$/.test(own) && own !== 'function' ? own : nameBefore(tokens, index);
      if (tokens[body]?.text === '{') add(body, name, index, pairs.get(body) ?? body);
    } else if (token.text === '=>') {
      const first = tokens[index - 1]?.text === ')' ? (pairs.get(index - 1) ?? index - 1) : index - 1;
      const last = next === '{' ? (pairs.get(index + 1) ?? index + 1) : expressionEnd(tokens, pairs, index + 1);
      add(index + 1, nameBefore(tokens, first), first, last);
    } else if (token.text === '(' && index > 0) {
      // A method: `name(...) {`, `get name() {`, `#name() {`, `[computed]() {`.
      const before = tokens[index - 1]?.text ?? '';
      const body = (pairs.get(index) ?? index) + 1;
      const isName = (/^[#\w$]+$/.test(before) && !notMethodNames.has(before)) || before === ']';
      const isCall = tokens[index - 2]?.text === '.' || tokens[index - 2]?.text === 'extends';
      if (isName && !isCall && tokens[body]?.text === '{') {
        const first = before === ']' ? (pairs.get(index - 1) ?? index - 1) : index - 1;
        add(body, before === ']' ? '[computed]' : before, first, pairs.get(body) ?? body);
      }
    }
  });
  return [...found.values()].sort((a, b) => a.line - b.line);
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'generated' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** A unit test, or a helper only unit tests use (as in imports.test.ts). */
const isTestCode = (file: string): boolean => file.endsWith('.test.ts') || file.split(sep).includes('testing');

/** `file:line name (N lines)` for each function of code that ships in `workspace` that is over the limit. */
function overLimit(workspace: string): string[] {
  return sources(join(root, workspace))
    .filter((file) => !isTestCode(file))
    .flatMap((file) =>
      functionSpans(readFileSync(file, 'utf8')).flatMap((span) =>
        span.lines > maxLines ? [`${relative(root, file)}:${span.line} ${span.name} (${span.lines} lines)`] : [],
      ),
    );
}

for (const workspace of enforced) {
  test(`no function of ${workspace}'s code that ships is over ${maxLines} lines`, () => {
    assert.deepEqual(overLimit(workspace), []);
  });
}

test('the measure finds every kind of function and skips what only looks like code', () => {
  const source = [
    'export function plain(a: number): number {', // 1
    "  const text = '{ not a block'; // {",
    '  const pattern = /[{}]\\//g;',
    '  const shape = `${JSON.stringify({ a: 1 })} }`;',
    '  return a / 2;',
    '}',
    'class Holder<T> {',
    '  #field = 1;',
    '  get size(): number {',
    '    return this.#field;', // 10
    '  }',
    '  async *items(): AsyncGenerator<T> {',
    '    yield* [];',
    '  }',
    '}',
    'const arrow = async (value: string): Promise<string> => {',
    '  if (value) return value;',
    '  return [1, 2].map((n) => n * 2).join(",");',
    '};',
    'export const expression = (a: number) => ({', // 20
    '  a,',
    '});',
    'const inner = function named() {};',
  ].join('\n');
  assert.deepEqual(functionSpans(source), [
    { name: 'plain', line: 1, lines: 6 },
    { name: 'size', line: 9, lines: 3 },
    { name: 'items', line: 12, lines: 3 },
    { name: 'arrow', line: 16, lines: 4 },
    { name: '(anonymous)', line: 18, lines: 1 },
    { name: 'expression', line: 20, lines: 3 },
    { name: 'named', line: 23, lines: 1 },
  ]);
});
