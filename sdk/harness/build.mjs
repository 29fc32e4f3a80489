// Bundles local-gateway.ts into one ESM file and prints its path. Packages stay external and
// resolve from node_modules, so the bundle is written under api-gateway/node_modules/.cache
// (api-gateway has its own ajv 8; the root's is ajv 6), as api-gateway/bench/run.mjs does.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';

const root = join(import.meta.dirname, '../..');
const dir = join(root, 'api-gateway/node_modules/.cache/sdk-harness');
mkdirSync(dir, { recursive: true });
const outfile = join(dir, 'local-gateway.mjs');
await build({
  entryPoints: [join(import.meta.dirname, 'local-gateway.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  packages: 'external',
  alias: {
    '@sandbox-platform/api': join(root, 'crds/src/index.ts'),
    '@sandbox-platform/test-support': join(root, 'test-support/src/index.ts'),
    '@sandbox-platform/test-support/gateway': join(root, 'test-support/gateway/gateway-env.ts'),
  },
  logLevel: 'warning',
});
process.stdout.write(`${outfile}\n`);
