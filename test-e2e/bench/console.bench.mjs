// make bench-console (issue 31, ADR 0032): the web console's first load in headless Chromium
// against the gateway, side by side with a floor in the same run: a navigation to the gateway's
// /healthz (a few bytes of JSON: the browser's and the network's own cost of one load).
//
//   console: a fresh browser context opens /console/ (nothing cached); bytes on the wire of the
//            HTML, JS and CSS (Resource Timing transferSize), time to interactive (the console's
//            `console-interactive` mark: the sign-in form is on the page and has the focus) and
//            the load event, ms from navigation start;
//   floor:   a fresh context opens /healthz; its load event.
// The two are interleaved round by round (load drift hits both); p50/p99 of each and the ratio of
// the p50s are printed, with the load average. Figures only, never asserted; the budget
// (JS at most 300 KB gzipped) is printed beside the JS size. Flags: --rounds N (default 20).
// Needs E2E_GATEWAY_URL (.localkube/platform/platform.env) and /usr/bin/chromium (E2E_CHROMIUM).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '20' } } });
const base = process.env.E2E_GATEWAY_URL;
if (!base) throw new Error('bench-console: E2E_GATEWAY_URL is not set (make platform-up writes it)');
const rounds = Number(args.rounds);

const browser = await chromium.launch({
  executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});

/** One first load of the console in a fresh context. */
async function consoleLoad() {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(new URL('/console/', base).href, { waitUntil: 'load' });
    await page.waitForFunction('document.documentElement.dataset.ready === "true"');
    return await page.evaluate(`(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const res = performance.getEntriesByType('resource');
      const size = (s) => res.filter((r) => r.name.endsWith(s)).reduce((n, r) => n + r.transferSize, 0);
      const body = (s) => res.filter((r) => r.name.endsWith(s)).reduce((n, r) => n + r.decodedBodySize, 0);
      return {
        html: nav.transferSize, js: size('.js'), css: size('.css'), jsDecoded: body('.js'), cssDecoded: body('.css'),
        tti: performance.getEntriesByName('console-interactive')[0].startTime, load: nav.loadEventEnd,
      };
    })()`);
  } finally {
    await context.close();
  }
}

/** One load of /healthz in a fresh context (the floor). */
async function floorLoad() {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(new URL('/healthz', base).href, { waitUntil: 'load' });
    return await page.evaluate('performance.getEntriesByType("navigation")[0].loadEventEnd');
  } finally {
    await context.close();
  }
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

console.log(
  `bench-console: ${base}, ${rounds} rounds, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
await consoleLoad(); // warm-up: the gateway's and Chromium's first-use costs stay out of the figures
await floorLoad();
const c = [];
const f = [];
for (let i = 0; i < rounds; i++) {
  if (i % 2 === 0) {
    c.push(await consoleLoad());
    f.push(await floorLoad());
  } else {
    f.push(await floorLoad());
    c.push(await consoleLoad());
  }
}
await browser.close();
const last = c.at(-1);
const tti = c.map((m) => m.tti);
const load = c.map((m) => m.load);
console.log(
  `first load on the wire: html ${last.html} B + js ${last.js} B + css ${last.css} B = ${last.html + last.js + last.css} B ` +
    `(decoded js ${last.jsDecoded} B, css ${last.cssDecoded} B); JS budget 300000 B gzipped`,
);
console.log(
  `console time to interactive  p50 ${pct(tti, 50).toFixed(0)} ms  p99 ${pct(tti, 99).toFixed(0)} ms`,
);
console.log(
  `console load event           p50 ${pct(load, 50).toFixed(0)} ms  p99 ${pct(load, 99).toFixed(0)} ms`,
);
console.log(`floor (/healthz) load event  p50 ${pct(f, 50).toFixed(0)} ms  p99 ${pct(f, 99).toFixed(0)} ms`);
console.log(`ratio console TTI / floor load, p50: ${(pct(tti, 50) / pct(f, 50)).toFixed(2)}x`);
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
