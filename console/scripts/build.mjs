#!/usr/bin/env node
// Builds the console's static files for the gateway image:
//   node console/scripts/build.mjs <out dir>
// -> index.html (the template: the gateway puts a per-answer CSP nonce in it), console.js (one
// classic script, minified, no eval), console.css (xterm.js's styles and ours). No inline script,
// no source maps, no hashed names (the gateway revalidates by ETag). Prints each file's size and
// gzip size, and fails when console.js is over the budget (300 KB gzipped). The output is
// reproducible: esbuild gives the same bytes for the same inputs.
import { copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, '..');
const repo = resolve(pkg, '..');
const out = resolve(process.argv[2] ?? join(pkg, 'dist/console'));
/** The budget for the console's JavaScript, gzipped. */
const JS_GZIP_BUDGET = 300 * 1000;

mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: repo,
  entryPoints: { console: join(pkg, 'src/main.ts') },
  outdir: out,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome120', 'firefox120', 'safari17'],
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  // The SDK's TypeScript sources, as the tests use them: never a stale sdk/typescript/dist.
  alias: { '@sandbox-platform/client': join(repo, 'sdk/typescript/src/index.ts') },
  logLevel: 'warning',
});
copyFileSync(join(pkg, 'src/index.html'), join(out, 'index.html'));

let jsGzip = 0;
for (const name of ['index.html', 'console.js', 'console.css']) {
  const bytes = readFileSync(join(out, name));
  const gz = gzipSync(bytes, { level: 9 }).length;
  if (name === 'console.js') jsGzip = gz;
  console.log(
    `console: ${relative(repo, join(out, name))} ${statSync(join(out, name)).size} bytes, ${gz} gzipped`,
  );
}
if (jsGzip > JS_GZIP_BUDGET) {
  console.error(`console: console.js is ${jsGzip} bytes gzipped; the budget is ${JS_GZIP_BUDGET}`);
  process.exit(1);
}
