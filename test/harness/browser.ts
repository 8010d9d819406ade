// A real browser for the panel's end-to-end suite: Debian's Chromium (installed with apt-get when missing; it stays
// installed), driven by playwright-core, with a fresh profile each time. Screenshots go to test/artifacts/.
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { testEnvironment } from './environment.ts';

export const chromiumPath = testEnvironment.chromiumPath;
export const artifactsDir = fileURLToPath(new URL('../artifacts/', import.meta.url));

const run = promisify(execFile);

function installed(): boolean {
  try {
    accessSync(chromiumPath, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Installs Debian's chromium package unless it is already there; the package lists are refreshed once if needed. */
export async function ensureChromium(): Promise<void> {
  if (installed()) return;
  const install = () =>
    run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      maxBuffer: 64 * 1024 * 1024,
    });
  try {
    await install();
  } catch {
    await run('apt-get', ['update'], { maxBuffer: 64 * 1024 * 1024 });
    await install();
  }
  if (!installed()) throw new Error(`apt-get install chromium did not provide ${chromiumPath}`);
}

export interface Browser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Saves a full-page screenshot as test/artifacts/<name>.png. */
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function openBrowser(options: { locale?: string } = {}): Promise<Browser> {
  await ensureChromium();
  mkdirSync(artifactsDir, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'notify-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    locale: options.locale ?? 'en-US',
    viewport: { width: 1280, height: 900 },
    timeout: 30_000,
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async screenshot(name) {
      await page.screenshot({ path: join(artifactsDir, `${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
