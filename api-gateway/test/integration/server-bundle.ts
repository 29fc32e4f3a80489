/**
 * src/server.ts bundled with esbuild into api-gateway/node_modules/.cache (external packages
 * resolve as in the package), to run the composition root as a real process.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

/** The bundle's path and the directory to remove afterwards (other files may go there too). */
export interface ServerBundle {
  dir: string;
  bundle: string;
  remove(): void;
}

export async function buildServerBundle(): Promise<ServerBundle> {
  const cache = join(here, '../../node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'server-test-'));
  const bundle = join(dir, 'server.mjs');
  await build({
    entryPoints: [join(here, '../../src/server.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    packages: 'external',
    logLevel: 'warning',
    alias: { '@sandbox-platform/api': join(here, '../../../crds/src/index.ts') },
  });
  return { dir, bundle, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
