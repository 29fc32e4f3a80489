// Builds bench/e2b-local.bench.ts and runs it with the arguments (../../bench-runner.mjs), as
// run.mjs does; the bundle's folder is five levels below the repository, where the bench's helpers
// find test-e2e/images/src by a relative path.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'e2b-local.bench.ts'), {
  dir: join(import.meta.dirname, '../node_modules/.cache/e2b-local'),
  external: true,
});
