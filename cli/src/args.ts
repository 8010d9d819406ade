// Reading a command's flags: node:util parseArgs (strict) plus typed accessors that turn every mistake into a UsageError
// naming the flag, so the operator sees one clear line instead of a stack trace.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseRate, parseRetention } from '@notify/platform';
import { expandScopes, type Scope } from '@notify/proto';

export async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  return text;
}

/** Thrown when the command line (or the environment notifyctl reads) is wrong; printed as one line, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  /** The command whose `--help` the hint points to, e.g. `plan create`; empty for the top level. */
  readonly command: string;
  constructor(message: string, command = '') {
    super(message);
    this.command = command;
  }
}

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly description: string;
  /** Shown in usage lines, e.g. `ID`, `FILE`. */
  readonly value?: string;
  readonly required?: boolean;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** Options every command accepts besides its own. */
export const commonOptions = {
  json: { type: 'boolean', description: 'print the response as JSON (proto3 JSON field names) instead of a table' },
  help: { type: 'boolean', description: 'show this help' },
} as const satisfies OptionSpecs;

type Raw = Record<string, string | boolean | undefined>;

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}

/** Parses `args` against `specs` (plus --json, --help); unknown flags, positionals and missing values are UsageErrors. */
export function parseFlags(command: string, args: readonly string[], specs: OptionSpecs): Flags {
  let values: Raw;
  try {
    const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } };
    for (const [name, spec] of Object.entries(specs)) options[name] = { type: spec.type };
    values = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }).values as Raw;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) {
      const message = firstLine((error as Error).message).replace(/\.$/, '');
      throw new UsageError(message.charAt(0).toLowerCase() + message.slice(1), command);
    }
    throw error;
  }
  const flags = new Flags(command, values);
  if (!flags.help) {
    for (const [name, spec] of Object.entries(specs)) {
      if (spec.required && values[name] === undefined) throw new UsageError(`missing required option --${name}`, command);
    }
  }
  return flags;
}

const integerPattern = /^\d+$/;

/** The parsed flags of one command, read through accessors that validate as they convert. */
export class Flags {
  readonly command: string;
  readonly #values: Raw;

  constructor(command: string, values: Raw) {
    this.command = command;
    this.#values = values;
  }

  get help(): boolean {
    return this.#values.help === true;
  }

  get json(): boolean {
    return this.#values.json === true;
  }

  has(name: string): boolean {
    return this.#values[name] !== undefined;
  }

  #fail(message: string): never {
    throw new UsageError(message, this.command);
  }

  optionalString(name: string): string | undefined {
    const value = this.#values[name];
    return typeof value === 'string' ? value : undefined;
  }

  string(name: string): string {
    const value = this.optionalString(name);
    if (value === undefined) this.#fail(`missing required option --${name}`);
    if (value.trim() === '') this.#fail(`--${name} must not be empty`);
    return value;
  }

  /** A boolean flag given bare (`--activate`). */
  flag(name: string): boolean {
    return this.#values[name] === true;
  }

  /** A boolean given as a value (`--suspended true|false`); undefined when absent. */
  optionalBoolean(name: string): boolean | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    if (value === 'true') return true;
    if (value === 'false') return false;
    this.#fail(`--${name} must be true or false, got '${value}'`);
  }

  optionalInteger(name: string, options: { min: number; max?: number }): number | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    const number = Number(value);
    if (!integerPattern.test(value) || !Number.isSafeInteger(number) || number < options.min || number > max) {
      const range = options.min === 0 ? 'a non-negative integer' : options.min === 1 ? 'a positive integer' : `an integer of at least ${options.min}`;
      this.#fail(`--${name} must be ${range}${options.max === undefined ? '' : ` up to ${options.max}`}, got '${value}'`);
    }
    return number;
  }

  /**
   * A per-key send rate (`--rate 600/min`, the grammar of NOTIFY_PUBLIC_SEND_RATE), or `default` for the gateway's
   * default, which is sent as ''; undefined when absent.
   */
  optionalRate(name: string): string | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    if (value.trim() === 'default') return '';
    try {
      parseRate(value);
    } catch (error) {
      this.#fail(`--${name} ${(error as Error).message}, or default; got '${value}'`);
    }
    return value.trim();
  }

  /** A message retention (`90d`, `36h`) checked as the server checks it, or `default` (sent as ''); undefined when absent. */
  optionalRetention(name: string): string | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    if (value.trim() === 'default') return '';
    try {
      parseRetention(value);
    } catch (error) {
      this.#fail(`--${name} ${(error as Error).message}, or default; got '${value}'`);
    }
    return value.trim();
  }

  /** A required database id: a positive integer. */
  id(name: string): number {
    if (!this.has(name)) this.#fail(`missing required option --${name}`);
    return this.optionalInteger(name, { min: 1 }) as number;
  }

  optionalId(name: string): number | undefined {
    return this.optionalInteger(name, { min: 1 });
  }

  optionalChoice<const T extends string>(name: string, choices: readonly T[]): T | undefined {
    const value = this.optionalString(name);
    if (value === undefined) return undefined;
    if (!(choices as readonly string[]).includes(value)) this.#fail(`--${name} must be one of ${choices.join(', ')}, got '${value}'`);
    return value as T;
  }

  /** A comma-separated list, each item trimmed, empty ones dropped; none when the flag is absent. */
  list(name: string): string[] {
    return (this.optionalString(name) ?? '')
      .split(',')
      .map((word) => word.trim())
      .filter((word) => word !== '');
  }

  /** API key scopes and presets, comma-separated (proto/src/scopes.ts), expanded; `sending` when the flag is absent. */
  scopes(name: string): Scope[] {
    const words = this.list(name);
    try {
      return expandScopes(words);
    } catch (error) {
      this.#fail(`--${name}: ${(error as Error).message}`);
    }
  }

  /** The UTF-8 content of the file a flag names. */
  async file(name: string): Promise<string> {
    const path = this.string(name);
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : firstLine((error as Error).message);
      this.#fail(`cannot read --${name} '${path}': ${reason}`);
    }
  }

  async optionalFile(name: string): Promise<string | undefined> {
    return this.has(name) ? this.file(name) : undefined;
  }

  /**
   * A secret (a password, a signing secret, a URL with credentials) from the file a flag names, or from standard input
   * when it names `-`: its first line, without the line break. Never from the command line itself, where shell history
   * and `ps` would keep it.
   */
  async secretFile(name: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
    const text = this.string(name) === '-' ? await readStream(stdin) : await this.file(name);
    const secret = text.split(/\r?\n/)[0] ?? '';
    if (secret.trim() === '') this.#fail(`--${name} holds nothing: the secret is its first line`);
    return secret;
  }

  /** Refuses a secret given on the command line, saying how to pass it instead. */
  refuseSecret(name: string, instead: string): void {
    if (this.has(name)) {
      this.#fail(
        `--${name} would leave the secret in shell history and in ps; pass it with --${instead} FILE, or --${instead} - to read it from standard input`,
      );
    }
  }

  /** Exactly one of two flags, e.g. `--subject` or `--subject-file`; returns the text or the file's content. */
  async textOrFile(textFlag: string, fileFlag: string): Promise<string> {
    if (this.has(textFlag) && this.has(fileFlag)) this.#fail(`give either --${textFlag} or --${fileFlag}, not both`);
    if (this.has(fileFlag)) return this.file(fileFlag);
    if (this.has(textFlag)) return this.string(textFlag);
    this.#fail(`missing required option --${textFlag} (or --${fileFlag})`);
  }
}
