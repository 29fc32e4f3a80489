// Builds bench/gateway.bench.ts into one ESM file with esbuild and runs it, passing the arguments
// through. The shared API package resolves to its sources; other packages stay external and
// resolve from node_modules, so the bundle is written under api-gateway/node_modules/.cache
// (api-gateway has its own ajv 8, the root's is ajv 6).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const cache = join(here, '../node_modules/.cache');
mkdirSync(cache, { recursive: true });
const out = mkdtempSync(join(cache, 'gateway-bench-'));
const outfile = join(out, 'gateway-bench.mjs');
try {
  await build({
    entryPoints: [join(here, 'gateway.bench.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    packages: 'external',
    alias: { '@sandbox-platform/api': join(here, '../../crds/src/index.ts') },
  });
  const result = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
