/**
 * The web console in a real browser (issue 31, ADR 0032): headless Chromium against the deployed
 * gateway. A person signs in with a wrong key (clear error), then with the e2e tenant's key (kept
 * in sessionStorage only), creates a session, types `echo hi` in the terminal and sees `hi`,
 * uploads a file and sees it listed, starts a background process and follows its log, starts a
 * web server in the sandbox and opens its preview through a signed link (and sees a short-lived
 * link fail once expired, and a link fail on another session's origin), the other tenant's key
 * sees none of the first tenant's sessions, and the session is deleted (its preview then fails).
 * A second session on the code interpreter's image runs Python in the code tab.
 * Every step leaves a screenshot under test-e2e/artifacts/console/<time>/. The first load's JS on
 * the wire must be within the budget (300 KB gzipped); its speed is make bench-console's.
 *
 * Needs: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY, E2E_OTHER_API_KEY, E2E_NAMESPACE (make platform-up),
 * the platform installed with gateway.preview.domain=preview.sandbox.test and scheme http (make
 * platform-up sets both; E2E_PREVIEW_DOMAIN names another), and /usr/bin/chromium.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';

import { uniqueName } from '../isolation/support.js';
import { PREVIEW_DOMAIN, Shots, artifactsDir, launch } from './browser.js';
import { firstLoad, signIn, terminalRows, unlabelledControls, untilText } from './console-support.js';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the console spec needs ${name} from the e2e setup (make platform-up)`);
  return value;
}

const BASE = new URL(env('E2E_GATEWAY_URL'));
const KEY = env('E2E_GATEWAY_API_KEY');
const OTHER_KEY = env('E2E_OTHER_API_KEY');
const NAMESPACE = env('E2E_NAMESPACE');
const CONSOLE = new URL('/console/', BASE).href;
const SESSION = uniqueName('console');
const MARKER = `preview-${SESSION}`;
/** A second session, on the image with the code interpreter, for the code tab. */
const PY_SESSION = `${SESSION}-py`;
const PY_IMAGE = process.env.E2E_PYTHON_IMAGE ?? 'localhost/sandbox-platform/sandbox-python:dev';
/** Port of the web server started in the sandbox. */
const PORT = 8000;

describe('web console in Chromium', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let shots: Shots;
  const cspViolations: string[] = [];
  let previewUrl = '';

  beforeAll(async () => {
    shots = new Shots(artifactsDir('console'));
    browser = await launch(BASE);
    context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    console.log(`console e2e: screenshots in ${shots.dir}`);
  });

  /** A test whose failure leaves a screenshot of the console page too. */
  const step = (title: string, fn: () => Promise<void>, timeout?: number): void =>
    it(
      title,
      async () => {
        try {
          await fn();
        } catch (err) {
          await shots.take(page, 'FAILED').catch(() => undefined);
          throw err;
        }
      },
      timeout,
    );

  afterAll(async () => {
    // The sessions go even when a step failed before the delete step.
    for (const name of [SESSION, PY_SESSION]) {
      await fetch(new URL(`/v1/sessions/${name}?namespace=${NAMESPACE}`, BASE), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${KEY}` },
      }).catch(() => undefined);
    }
    await browser?.close();
  });

  step('loads within the size budget: the JS on the wire is at most 300 KB (gzipped)', async () => {
    // Sizes only: speed (time to interactive) is measured by make bench-console.
    const fresh = await browser.newContext();
    try {
      const m = await firstLoad(await fresh.newPage(), CONSOLE);
      console.log(`console first load on the wire: html ${m.html} B, js ${m.js} B, css ${m.css} B`);
      expect(m.js).toBeGreaterThan(0);
      expect(m.js).toBeLessThanOrEqual(300_000);
    } finally {
      await fresh.close();
    }
  });

  step('a wrong key shows a clear error and is not kept', async () => {
    await page.goto(CONSOLE);
    await signIn(page, 'not-a-valid-key-0123456789abcdef');
    const error = page.locator('#error');
    await untilText(error, /The API key was refused \(401 unauthorized/);
    await shots.take(page, 'wrong-key');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  step('signs in by keyboard; the key is in sessionStorage only, never in the URL or a cookie', async () => {
    await page.goto(CONSOLE);
    await signIn(page, KEY);
    await untilText(page.locator('#sessions-table caption'), /Sessions: \d+/);
    await shots.take(page, 'signed-in');
    expect(await page.evaluate('sessionStorage.getItem("sandbox-console.key")')).toBe(KEY);
    expect(page.url()).not.toContain(KEY);
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await unlabelledControls(page)).toEqual([]);
  });

  step(
    'creates a session and shows it ready',
    async () => {
      await page.getByLabel('Name (optional)').fill(SESSION);
      await page.getByRole('button', { name: 'Create session' }).click();
      const row = page.locator(`tr[data-session="${SESSION}"]`);
      await untilText(row.locator('td').nth(1), /^ready$/, 240_000);
      await untilText(page.locator('#session-title'), new RegExp(`Session ${SESSION} \\(ready\\)`));
      await shots.take(page, 'session-created');
    },
    300_000,
  );

  step('runs echo hi in the terminal', async () => {
    await page.getByRole('tab', { name: 'Terminal' }).click();
    await page.getByRole('button', { name: 'Open terminal' }).click();
    await untilText(page.locator('#session-panel-terminal .hint'), /^Connected\.$/);
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('echo hi');
    await page.keyboard.press('Enter');
    await expect(terminalRows(page, (rows) => rows.includes('hi'))).resolves.toContain('hi');
    await shots.take(page, 'terminal-echo-hi');
  });

  step('uploads files and lists them', async () => {
    await page.getByRole('tab', { name: 'Terminal' }).press('ArrowRight');
    expect(await page.getByRole('tab', { name: 'Files' }).getAttribute('aria-selected')).toBe('true');
    const upload = page.getByLabel('Upload a file to this folder');
    await upload.setInputFiles({
      name: 'hello.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('hello from the console\n'),
    });
    await page.locator('tr[data-name="hello.txt"]').waitFor();
    await upload.setInputFiles({
      name: 'index.html',
      mimeType: 'text/html',
      buffer: Buffer.from(`<h1>${MARKER}</h1>\n`),
    });
    await page.locator('tr[data-name="index.html"]').waitFor();
    await page.getByRole('button', { name: 'View hello.txt' }).click();
    await untilText(page.locator('pre.file-text'), /^hello from the console\n$/);
    await shots.take(page, 'files-uploaded');
  });

  step('starts a background process and follows its log', async () => {
    await page.getByRole('tab', { name: 'Processes' }).click();
    await page
      .getByLabel('Command to run in the background')
      .fill('for i in 1 2 3; do echo line-$i; sleep 1; done');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await untilText(page.locator('pre.log'), /line-1\nline-2\nline-3\n\n\[exited with code 0\]/, 60_000);
    await shots.take(page, 'process-log');
  });

  step(
    'opens the preview of a server in the sandbox through its signed link, on its own origin',
    async () => {
      await page
        .getByLabel('Command to run in the background')
        .fill(`exec python3 -u -m http.server ${PORT} --bind 0.0.0.0`);
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await untilText(page.locator('pre.log'), /Serving HTTP on 0\.0\.0\.0 port 8000/, 60_000);
      await page.getByRole('tab', { name: 'Previews' }).click();
      await page.getByLabel('Port of the server in the sandbox').fill(String(PORT));
      await page.getByRole('button', { name: 'Make preview link' }).click();
      const link = page.getByRole('link', { name: new RegExp(`^Open port ${PORT}`) }).first();
      previewUrl = (await link.getAttribute('href')) ?? '';
      expect(new URL(previewUrl).hostname).toBe(`${PORT}-${SESSION}--${NAMESPACE}.${PREVIEW_DOMAIN}`);
      const [preview] = await Promise.all([context.waitForEvent('page'), link.click()]);
      await preview.waitForLoadState();
      await untilText(preview.locator('h1'), new RegExp(`^${MARKER}$`));
      expect(new URL(preview.url()).pathname).toBe('/');
      // The cookie is the preview origin's own and out of reach of the sandbox's pages.
      expect(await preview.evaluate('document.cookie')).toBe('');
      const cookies = await context.cookies(new URL(previewUrl).origin);
      expect(
        cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, domain: c.domain })),
      ).toEqual([
        { name: 'sandbox-preview', httpOnly: true, sameSite: 'Lax', domain: new URL(previewUrl).hostname },
      ]);
      expect(await context.cookies(CONSOLE)).toEqual([]);
      await shots.take(preview, 'preview-open');
      await preview.close();
    },
  );

  step("refuses the link on another session's origin, and once it expired", async () => {
    const other = new URL(previewUrl);
    other.hostname = `${PORT}-${SESSION}-other--${NAMESPACE}.${PREVIEW_DOMAIN}`;
    const elsewhere = await context.newPage();
    await elsewhere.goto(other.href);
    await untilText(elsewhere.locator('body'), /preview-unauthorized[\s\S]*for another origin/);
    await shots.take(elsewhere, 'preview-other-origin');
    await elsewhere.close();

    await page.getByLabel('Link lifetime in seconds').fill('2');
    await page.getByRole('button', { name: 'Make preview link' }).click();
    await untilText(page.locator('ul.links li').first(), /expires/);
    const shortLived =
      (await page
        .getByRole('link', { name: new RegExp(`^Open port ${PORT}`) })
        .first()
        .getAttribute('href')) ?? '';
    expect(shortLived).not.toBe(previewUrl);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const expired = await context.newPage();
    await expired.goto(shortLived);
    await untilText(expired.locator('body'), /preview-unauthorized[\s\S]*link has expired/);
    await shots.take(expired, 'preview-link-expired');
    await expired.close();
  });

  step(
    'runs Python in the code tab of a session on the code interpreter image',
    async () => {
      await page.getByLabel('Name (optional)').fill(PY_SESSION);
      await page.getByLabel('Image (optional)').fill(PY_IMAGE);
      await page.getByRole('button', { name: 'Create session' }).click();
      await untilText(page.locator(`tr[data-session="${PY_SESSION}"] td`).nth(1), /^ready$/, 240_000);
      await page.getByRole('tab', { name: 'Code' }).click();
      await page.getByLabel(/^Python code/).fill("print('hi from python')\n21 * 2");
      await page.getByRole('button', { name: 'Run code' }).click();
      await untilText(page.locator('#session-panel-code .hint'), /^Run ok in \d+ ms/, 120_000);
      expect(await page.locator('.code-out pre.code-stdout').first().textContent()).toBe('hi from python\n');
      expect(await page.locator('.code-out pre.code-result').first().textContent()).toBe('42');
      await shots.take(page, 'code-run');
    },
    300_000,
  );

  step("another tenant's key sees none of the first tenant's sessions", async () => {
    const otherContext = await browser.newContext();
    try {
      const other = await otherContext.newPage();
      await other.goto(CONSOLE);
      await signIn(other, OTHER_KEY);
      await untilText(other.locator('#sessions-table caption'), /Sessions: \d+/);
      expect(await other.locator(`tr[data-session="${SESSION}"]`).count()).toBe(0);
      expect(await other.locator('#sessions-table').textContent()).not.toContain(SESSION);
      await shots.take(other, 'other-tenant');
      // Asking for the first tenant's namespace is refused outright.
      await other.getByRole('button', { name: 'Sign out' }).click();
      await signIn(other, OTHER_KEY, NAMESPACE);
      await untilText(other.locator('#error'), /This API key may not use that namespace \(403 forbidden/);
      await shots.take(other, 'other-tenant-namespace-refused');
    } finally {
      await otherContext.close();
    }
  });

  step('deletes the session; its preview fails from then on', async () => {
    await page
      .locator(`tr[data-session="${SESSION}"]`)
      .getByRole('button', { name: `Delete session ${SESSION}` })
      .click();
    await page.getByRole('button', { name: `Confirm: delete session ${SESSION}` }).click();
    await untilText(page.locator('#status'), new RegExp(`Deleted ${SESSION}\\.`));
    // A locator wait, not waitForFunction: that evaluates its predicate with eval in the page, which
    // the console's CSP (script-src 'self', no 'unsafe-eval') refuses.
    await page.locator(`tr[data-session="${SESSION}"]`).waitFor({ state: 'detached', timeout: 60_000 });
    await shots.take(page, 'session-deleted');
    const after = await context.newPage();
    await after.goto(new URL('/', previewUrl).href);
    await untilText(after.locator('body'), /session-gone|session-not-found|preview-unauthorized/);
    await shots.take(after, 'preview-after-delete');
    await after.close();
    expect(cspViolations).toEqual([]);
  });
});
