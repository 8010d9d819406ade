// Reads the repository's Dockerfile the way the builder does, for the checks that need no Docker engine: stages,
// their FROM chains, and what each build target ends up with (WORKDIR, USER, ENV, CMD/ENTRYPOINT, COPY and RUN steps).
import { posix } from 'node:path';

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  /** 1-based line of the instruction's first line. */
  readonly line: number;
}

export interface Stage {
  readonly name: string;
  /** The image or stage named in FROM, variables substituted. */
  readonly base: string;
  readonly instructions: readonly Instruction[];
}

export interface CopyStep {
  readonly from?: string;
  readonly chown?: string;
  readonly sources: readonly string[];
  /** Absolute path in the image. */
  readonly destination: string;
  readonly stage: string;
}

export interface RunStep {
  readonly command: string;
  readonly stage: string;
  readonly user: string;
}

/** What one build target's image holds and runs with. */
export interface ImageConfig {
  readonly target: string;
  /** Stages from the external base image down to the target. */
  readonly chain: readonly Stage[];
  readonly workdir: string;
  readonly user: string;
  readonly env: Readonly<Record<string, string>>;
  /** Exec form (a JSON array) or undefined; shell form is refused by `parseDockerfile`'s caller through `shellForm`. */
  readonly cmd?: readonly string[];
  readonly entrypoint?: readonly string[];
  /** CMD or ENTRYPOINT written in shell form: /bin/sh would be PID 1 and swallow SIGTERM. */
  readonly shellForm: readonly string[];
  readonly copies: readonly CopyStep[];
  readonly runs: readonly RunStep[];
}

export interface Dockerfile {
  readonly args: Readonly<Record<string, string>>;
  readonly stages: readonly Stage[];
}

/** Joins continuation lines, drops comments and blank lines. */
function instructions(text: string): Instruction[] {
  const result: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\r$/, '');
    if (!pending && /^\s*(#|$)/.test(line)) return;
    if (pending && /^\s*#/.test(line)) return; // comments inside a continued instruction
    const continued = /\\\s*$/.test(line);
    const body = continued ? line.replace(/\\\s*$/, '') : line;
    pending = pending ? { text: `${pending.text} ${body.trim()}`, line: pending.line } : { text: body.trim(), line: index + 1 };
    if (continued) return;
    const match = /^(\S+)\s*(.*)$/.exec(pending.text);
    if (match) result.push({ keyword: (match[1] ?? '').toUpperCase(), args: (match[2] ?? '').trim(), line: pending.line });
    pending = undefined;
  });
  return result;
}

function substitute(value: string, variables: Readonly<Record<string, string>>): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, braced: string | undefined, bare: string | undefined) => variables[braced ?? bare ?? ''] ?? '',
  );
}

export function parseDockerfile(text: string): Dockerfile {
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  let current: { name: string; base: string; instructions: Instruction[] } | undefined;
  for (const instruction of instructions(text)) {
    if (instruction.keyword === 'FROM') {
      const match = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      if (!match) throw new Error(`line ${instruction.line}: cannot read FROM ${instruction.args}`);
      current = { name: match[2] ?? `stage-${stages.length}`, base: substitute(match[1] ?? '', args), instructions: [] };
      stages.push(current);
    } else if (!current) {
      if (instruction.keyword !== 'ARG') throw new Error(`line ${instruction.line}: ${instruction.keyword} before the first FROM`);
      const [name, value] = instruction.args.split('=', 2) as [string, string | undefined];
      args[name.trim()] = value ?? '';
    } else {
      current.instructions.push(instruction);
    }
  }
  return { args, stages };
}

function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed = JSON.parse(args) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) throw new Error(`not an exec form: ${args}`);
  return parsed;
}

/** `ENV A=1 B="two words"` (the legacy `ENV A 1` form too). */
function envPairs(args: string): [string, string][] {
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const [name, ...rest] = args.split(/\s+/);
    return [[name ?? '', rest.join(' ')]];
  }
  const pairs: [string, string][] = [];
  for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) {
    const raw = match[2] ?? '';
    pairs.push([match[1] ?? '', /^["']/.test(raw) ? raw.slice(1, -1) : raw]);
  }
  return pairs;
}

function copyStep(args: string, workdir: string, stage: string): CopyStep {
  const words = args.split(/\s+/);
  const flags: Record<string, string> = {};
  while (words[0]?.startsWith('--')) {
    const [flag, value] = (words.shift() ?? '').slice(2).split('=', 2) as [string, string | undefined];
    flags[flag] = value ?? 'true';
  }
  const destination = words.pop() ?? '';
  return {
    ...(flags.from ? { from: flags.from } : {}),
    ...(flags.chown ? { chown: flags.chown } : {}),
    sources: words,
    destination: posix.resolve(workdir, destination) + (destination.endsWith('/') ? '/' : ''),
    stage,
  };
}

/** The configuration the `target` stage's image is built with: its own instructions over those of every stage it is FROM. */
export function imageConfig(dockerfile: Dockerfile, target: string): ImageConfig {
  const byName = new Map(dockerfile.stages.map((stage) => [stage.name, stage]));
  const chain: Stage[] = [];
  for (let stage = byName.get(target); stage; stage = byName.get(stage.base)) chain.unshift(stage);
  if (chain.length === 0) throw new Error(`no stage named ${target}`);
  let workdir = '/';
  let user = 'root';
  const env: Record<string, string> = {};
  let cmd: string[] | undefined;
  let entrypoint: string[] | undefined;
  const shellForm: string[] = [];
  const copies: CopyStep[] = [];
  const runs: RunStep[] = [];
  for (const stage of chain) {
    for (const { keyword, args } of stage.instructions) {
      if (keyword === 'WORKDIR') workdir = posix.resolve(workdir, substitute(args, env));
      else if (keyword === 'USER') user = args;
      else if (keyword === 'ENV') for (const [name, value] of envPairs(args)) env[name] = substitute(value, env);
      else if (keyword === 'COPY' || keyword === 'ADD') copies.push(copyStep(args, workdir, stage.name));
      else if (keyword === 'RUN') runs.push({ command: args.replace(/^(--\S+\s+)+/, ''), stage: stage.name, user });
      else if (keyword === 'CMD' || keyword === 'ENTRYPOINT') {
        const form = execForm(args);
        if (!form) shellForm.push(`${keyword} ${args}`);
        if (keyword === 'CMD') cmd = form;
        else {
          entrypoint = form;
          cmd = undefined; // an ENTRYPOINT resets the CMD inherited from the base
        }
      }
    }
  }
  return { target, chain, workdir, user, env, ...(cmd ? { cmd } : {}), ...(entrypoint ? { entrypoint } : {}), shellForm, copies, runs };
}

/** The process the container starts: ENTRYPOINT followed by CMD. */
export function commandLine(config: ImageConfig): string[] {
  return [...(config.entrypoint ?? []), ...(config.cmd ?? [])];
}
