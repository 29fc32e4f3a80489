// The CommonJS half of the dual package, after `tsc -b` wrote the ES modules and their
// declarations to dist/: dist/index.cjs is one esbuild bundle of the same sources (no runtime
// dependencies to leave out), and each dist/*.d.ts gets a dist/*.d.cts twin whose relative imports
// point at the .cjs names, so TypeScript types `require('@sandbox-platform/client')` (NodeNext
// resolves the "require" condition to a CommonJS declaration file; an ESM .d.ts there is an error).
// Both halves are the same code: a class from one is not `instanceof` the other's (README,
// "import and require").
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';

const pkg = join(import.meta.dirname, '..');
const dist = join(pkg, 'dist');

await build({
  entryPoints: [join(pkg, 'src/index.ts')],
  bundle: true,
  platform: 'neutral',
  format: 'cjs',
  target: 'es2022',
  outfile: join(dist, 'index.cjs'),
  legalComments: 'none',
  logLevel: 'warning',
});

let declarations = 0;
for (const name of readdirSync(dist)) {
  if (!name.endsWith('.d.ts')) continue;
  const text = readFileSync(join(dist, name), 'utf8').replace(
    /(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.js\2/g,
    (_m, head, q, path) => `${head}${q}${path}.cjs${q}`,
  );
  writeFileSync(join(dist, name.replace(/\.d\.ts$/, '.d.cts')), text);
  declarations++;
}
process.stdout.write(`sdk/typescript: dist/index.cjs and ${declarations} .d.cts declarations\n`);
