// Lays out a build target's filesystem the way its COPY steps would, without a Docker engine: build-context files
// filtered by .dockerignore, and for `COPY --from=deps-*` the production dependency tree of that stage's
// `npm ci --omit=dev --workspace <ws>` (as `npm ls --omit=dev` reads it from the local install, each package linked to
// it). A service started from this tree finds exactly what its image would hold: a workspace the Dockerfile forgets to
// copy, a file .dockerignore drops or a dependency declared only for development breaks it here as it would there.
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative } from 'node:path';
import { promisify } from 'node:util';
import type { CopyStep, Dockerfile, ImageConfig } from './dockerfile.ts';

const run = promisify(execFile);

/** `.dockerignore` as Docker applies it: patterns in order, the last one matching a path (or a folder above it) decides. */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const negated = line.startsWith('!');
      const pattern = posix.normalize((negated ? line.slice(1) : line).replace(/^\/+/, ''));
      let regex = '';
      for (let index = 0; index < pattern.length; index++) {
        const char = pattern[index] ?? '';
        if (char === '*' && pattern[index + 1] === '*') {
          index++;
          if (pattern[index + 1] === '/') {
            index++;
            regex += '(?:.*/)?';
          } else regex += '.*';
        } else if (char === '*') regex += '[^/]*';
        else if (char === '?') regex += '[^/]';
        else regex += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { negated, regex: new RegExp(`^${regex}(?:/.*)?$`) };
    });
  return (path) => {
    let excluded = false;
    for (const rule of rules) if (rule.regex.test(path)) excluded = !rule.negated;
    return excluded;
  };
}

export interface StagedImage {
  readonly config: ImageConfig;
  /** Stands for the image's `/`. */
  readonly rootfs: string;
  /** Host path of an absolute path in the image. */
  path(imagePath: string): string;
  /** Every file and link under the rootfs with its size and modification time, to tell whether a run wrote anything. */
  snapshot(): Map<string, string>;
  remove(): void;
}

/** Files and links under `dir`, node_modules folders left out. */
function walk(dir: string, base: string, visit: (relativePath: string, absolutePath: string) => void): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const absolute = join(dir, entry.name);
    const rel = relative(base, absolute).split('\\').join('/');
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') walk(absolute, base, visit);
    } else if (entry.name !== 'node_modules') visit(rel, absolute);
  }
}

function copyFromContext(step: CopyStep, contextDir: string, ignored: (path: string) => boolean, hostPath: (imagePath: string) => string): void {
  for (const source of step.sources) {
    const clean = posix.normalize(source).replace(/\/$/, '');
    const absolute = join(contextDir, clean);
    if (!existsSync(absolute)) throw new Error(`COPY ${source}: not in the build context`);
    if (statSync(absolute).isDirectory()) {
      // A folder's content goes into the destination folder.
      walk(absolute, contextDir, (rel, file) => {
        if (ignored(rel)) return;
        const target = hostPath(posix.join(step.destination, posix.relative(clean, rel)));
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(file, target);
        chmodSync(target, statSync(file).mode);
      });
    } else {
      if (ignored(clean)) throw new Error(`COPY ${source}: excluded by .dockerignore`);
      const target = hostPath(step.destination.endsWith('/') ? posix.join(step.destination, posix.basename(clean)) : step.destination);
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(absolute, target);
    }
  }
}

/** Workspace folder of each @notify package, from the workspace manifests. */
function workspaceFolders(contextDir: string): Map<string, string> {
  const root = JSON.parse(readFileSync(join(contextDir, 'package.json'), 'utf8')) as { workspaces: string[] };
  return new Map(
    root.workspaces.map((folder) => [(JSON.parse(readFileSync(join(contextDir, folder, 'package.json'), 'utf8')) as { name: string }).name, folder]),
  );
}

/**
 * The production tree a deps stage installs, linked into the staged /app (workspace packages to the staged
 * workspaces). Resolves the workspace folders it links, which later COPY steps must provide.
 */
async function linkProductionDependencies(workspace: string, appDir: string, contextDir: string): Promise<string[]> {
  const { stdout } = await run('npm', ['ls', '--all', '--omit=dev', '--workspace', workspace, '--include-workspace-root=false', '--parseable'], {
    cwd: contextDir,
    maxBuffer: 16 * 1024 * 1024,
  }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }), // npm ls exits 1 on extraneous packages of other workspaces
  );
  const folders = workspaceFolders(contextDir);
  const paths = stdout.split('\n').filter((line) => line.startsWith(contextDir));
  if (paths.length < 3) throw new Error(`npm ls found no production dependencies of ${workspace}`);
  const linkedWorkspaces: string[] = [];
  for (const path of paths) {
    const rel = relative(contextDir, path).split('\\').join('/');
    // Packages directly in a node_modules folder (nested ones come along with their parent).
    const match = /^(?:([^/]+)\/)?node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(rel);
    if (!match) continue;
    const [, owner, name] = match as unknown as [string, string | undefined, string];
    const link = join(appDir, owner ?? '', 'node_modules', name);
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    const workspaceFolder = folders.get(name);
    if (workspaceFolder) linkedWorkspaces.push(workspaceFolder);
    // npm links workspace packages relatively, so they resolve to the image's own copy of the workspace.
    symlinkSync(workspaceFolder ? relative(dirname(link), join(appDir, workspaceFolder)) : path, link);
  }
  return linkedWorkspaces;
}

/** `RUN ln -s <target> <link>`, the one filesystem change the runtime stages make that a run can observe. */
function applyRun(command: string, hostPath: (imagePath: string) => string): void {
  for (const part of command.split('&&').map((segment) => segment.trim())) {
    const link = /^ln -s (\S+) (\S+)$/.exec(part);
    if (!link) continue;
    const [, target, path] = link as unknown as [string, string, string];
    mkdirSync(dirname(hostPath(path)), { recursive: true });
    symlinkSync(hostPath(target), hostPath(path));
  }
}

export async function stageImage(dockerfile: Dockerfile, config: ImageConfig, contextDir: string): Promise<StagedImage> {
  const rootfs = mkdtempSync(join(tmpdir(), `notify-image-${config.target}-`));
  const hostPath = (imagePath: string): string => join(rootfs, posix.resolve('/', imagePath));
  const ignored = dockerignore(readFileSync(join(contextDir, '.dockerignore'), 'utf8'));
  const runtimeStages = new Set(config.chain.map((stage) => stage.name));
  try {
    mkdirSync(hostPath(config.workdir), { recursive: true });
    const linked: { workspace: string; folder: string; appDir: string }[] = [];
    for (const step of config.copies) {
      if (!step.from) copyFromContext(step, contextDir, ignored, hostPath);
      else {
        const deps = dockerfile.stages.find((stage) => stage.name === step.from);
        const install = deps?.instructions.map((instruction) => /npm ci .*--workspace[= ](\S+)/.exec(instruction.args)?.[1]).find(Boolean);
        if (!install) throw new Error(`COPY --from=${step.from}: only stages that npm ci one workspace can be staged`);
        const appDir = hostPath(step.destination);
        for (const folder of await linkProductionDependencies(install, appDir, contextDir)) linked.push({ workspace: install, folder, appDir });
      }
    }
    for (const { workspace, folder, appDir } of linked) {
      if (!existsSync(join(appDir, folder, 'package.json')))
        throw new Error(`${config.target}: ${workspace} depends on the ${folder} workspace, but the image has no ${folder}/ (COPY it in the Dockerfile)`);
    }
    for (const step of config.runs) if (runtimeStages.has(step.stage)) applyRun(step.command, hostPath);
  } catch (error) {
    rmSync(rootfs, { recursive: true, force: true });
    throw error;
  }
  return {
    config,
    rootfs,
    path: hostPath,
    snapshot() {
      const files = new Map<string, string>();
      walk(rootfs, rootfs, (rel, absolute) => {
        const stat = statSync(absolute, { throwIfNoEntry: false });
        files.set(rel, stat ? `${stat.size}:${stat.mtimeMs}` : 'dangling');
      });
      return files;
    },
    remove: () => rmSync(rootfs, { recursive: true, force: true }),
  };
}
