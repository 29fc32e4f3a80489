// Bundles the CLI into one executable file, dist/sbx.cjs, with the SDK and yaml inside (no runtime
// dependencies). CommonJS so the file runs under any name on every Node 20: kubectl finds it as
// `kubectl-sandbox` (no extension), Node loads an extensionless file as CommonJS, and only Node
// 20.19+ would detect ES module syntax there (docs/adr/0010-clients.md).
import { chmodSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';

const here = import.meta.dirname;
const outfile = join(here, '../dist/sbx.cjs');

await build({
  entryPoints: [join(here, '../src/main.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  banner: { js: '#!/usr/bin/env node' },
  // The SDK from its sources (no prior tsc build needed), as bench-runner.mjs does for the API package.
  alias: { '@sandbox-platform/client': join(here, '../../typescript/src/index.ts') },
  legalComments: 'none',
  logLevel: 'warning',
});
chmodSync(outfile, 0o755);
process.stdout.write(`${outfile}\n`);
