#!/usr/bin/env node
// Bundles one service entry point into a single ESM file for an image:
//   node bundle.mjs <entry.ts> <out.mjs> <image name, for messages>
//
// Why one file: the runtime image then needs node and this file only, no node_modules tree.
// CommonJS dependencies (@dot-i/k8s-operator, its nested client-node 0.20) call require() and
// read __dirname/__filename, which do not exist in an ES module, so the banner defines them.
// The output is reproducible: esbuild emits the same bytes for the same inputs, and no
// timestamp or absolute path is added.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const [entry, out, image] = process.argv.slice(2);
if (!entry || !out || !image) {
  console.error('usage: bundle.mjs <entry.ts> <out.mjs> <image>');
  process.exit(2);
}
if (!existsSync(entry)) {
  console.error(
    `bundle: ${relative(repo, resolve(entry))} does not exist yet, so the ${image} image cannot be built.\n` +
      `bundle: that source is written in its own workspace; build the other images with 'make images-base'.`,
  );
  process.exit(3);
}

const banner = [
  "import { createRequire as __imgCreateRequire } from 'node:module';",
  "import { fileURLToPath as __imgFileURLToPath } from 'node:url';",
  "import { dirname as __imgDirname } from 'node:path';",
  'const require = __imgCreateRequire(import.meta.url);',
  'const __filename = __imgFileURLToPath(import.meta.url);',
  'const __dirname = __imgDirname(__filename);',
].join('\n');

mkdirSync(dirname(out), { recursive: true });
const result = await esbuild.build({
  // Paths in the bundle's comments are relative to this directory: pin it to the repo so the
  // bytes do not depend on where make was started.
  absWorkingDir: repo,
  entryPoints: [resolve(entry)],
  outfile: resolve(out),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: banner },
  // The workspace package is resolved to its TypeScript sources, as the tests do, so bundling
  // never depends on a stale crds/dist.
  alias: { '@sandbox-platform/api': join(repo, 'crds/src/index.ts') },
  // Optional native add-ons of ws (bufferutil, utf-8-validate) are loaded in try/catch; they
  // are not installed and the pure-JS fallbacks are used.
  external: ['bufferutil', 'utf-8-validate'],
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`bundle: ${relative(repo, resolve(out))} ${(bytes / 1e6).toFixed(1)}MB`);
