/**
 * The console spec's browser: Debian's Chromium (`apt-get install chromium`, installed by
 * test-e2e/images/scripts/host-deps.sh) driven by playwright-core, headless, with the flags that
 * work on this machine as root (no sandbox, no GPU, no QUIC, no background networking: its
 * connections are refused here and it would retry them) and a fresh profile per launch. The
 * wildcard preview host is mapped to the gateway's address (--host-resolver-rules), as a
 * wildcard DNS record would in a deployment. Screenshots of each step go to a gitignored folder.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { chromium, type Browser, type Page } from 'playwright-core';

import { REPO_ROOT } from '@sandbox-platform/test-support';

/** Where Debian installs Chromium (E2E_CHROMIUM overrides). */
export const CHROMIUM = process.env.E2E_CHROMIUM ?? '/usr/bin/chromium';

/** The preview domain the platform was installed with (make platform-up: preview.sandbox.test). */
export const PREVIEW_DOMAIN = process.env.E2E_PREVIEW_DOMAIN ?? 'preview.sandbox.test';

/** Launches headless Chromium with the preview domain mapped to `gateway` (host[:port]). */
export async function launch(gateway: URL): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (test-e2e/images/scripts/host-deps.sh does) or set E2E_CHROMIUM`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--host-resolver-rules=MAP *.${PREVIEW_DOMAIN} ${gateway.host}`,
    ],
  });
}

/** A folder for this run's screenshots under test-e2e/artifacts/ (gitignored). */
export function artifactsDir(name: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dir = join(REPO_ROOT, 'test-e2e/artifacts', name, stamp);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Numbered screenshots of the steps of a spec. */
export class Shots {
  private n = 0;
  constructor(readonly dir: string) {}

  /** Saves a full-page screenshot named after the step; returns its path. */
  async take(page: Page, step: string): Promise<string> {
    const file = join(this.dir, `${String(++this.n).padStart(2, '0')}-${step}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  }
}
