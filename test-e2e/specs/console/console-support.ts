/**
 * Page helpers of the console spec: sign in by keyboard, wait for text, read the terminal's rows,
 * find controls without an accessible name, and measure a first load.
 */
import type { Locator, Page } from 'playwright-core';

/** Polls a locator's text until it matches (or fails naming what it last saw). */
export async function untilText(locator: Locator, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    last =
      (await locator
        .first()
        .textContent({ timeout: 2_000 })
        .catch(() => null)) ?? '';
    if (pattern.test(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `no ${String(pattern)} in ${String(locator)}; last text: ${JSON.stringify(last.slice(-600))}`,
  );
}

/** Signs in with the keyboard only: the key field has the focus when the page opens. */
export async function signIn(page: Page, key: string, namespace?: string): Promise<void> {
  await page.getByLabel('API key').waitFor();
  await page.waitForFunction('document.activeElement && document.activeElement.id === "signin-key"');
  await page.keyboard.type(key);
  if (namespace) {
    await page.keyboard.press('Tab');
    await page.keyboard.type(namespace);
  }
  await page.keyboard.press('Enter');
}

/** The terminal's rows as text, once `ok` holds for them (polled). */
export async function terminalRows(
  page: Page,
  ok: (rows: string[]) => boolean,
  timeoutMs = 30_000,
): Promise<string[]> {
  const end = Date.now() + timeoutMs;
  let rows: string[] = [];
  while (Date.now() < end) {
    rows = await page.evaluate<string[]>(
      '[...document.querySelectorAll(".xterm-rows > div")].map((r) => r.textContent.replace(/\\u00a0/g, " ").trimEnd())',
    );
    if (ok(rows)) return rows;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`terminal rows never matched: ${JSON.stringify(rows.filter(Boolean).slice(-10))}`);
}

/** Inputs, selects and buttons on the page with no accessible name (label, aria-label or text). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`[...document.querySelectorAll('input, select, button, textarea')]
    .filter((e) => !e.closest('.xterm'))
    .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.textContent || '').trim())
    .map((e) => e.outerHTML.slice(0, 120))`);
}

/** A first load's bytes on the wire by kind. */
export interface FirstLoad {
  html: number;
  js: number;
  css: number;
}

/** Loads the console in a fresh page and reads its bytes on the wire (Navigation and Resource Timing). */
export async function firstLoad(page: Page, url: string): Promise<FirstLoad> {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction('document.documentElement.dataset.ready === "true"');
  return page.evaluate<FirstLoad>(`(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource');
    const size = (suffix) => res.filter((r) => r.name.split('?')[0].endsWith(suffix)).reduce((n, r) => n + r.transferSize, 0);
    return { html: nav.transferSize, js: size('.js'), css: size('.css') };
  })()`);
}
