// Builds bench/exec-roundtrip.ts into one ESM file with esbuild (no prior `tsc -b` needed; the
// shared API package resolves to its sources) and runs it, passing the arguments through.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'sbx-bench-build-'));
const outfile = join(out, 'exec-roundtrip.mjs');
try {
  await build({
    entryPoints: [join(here, 'exec-roundtrip.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    alias: { '@sandbox-platform/api': join(here, '../../crds/src/index.ts') },
  });
  const result = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
