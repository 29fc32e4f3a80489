// Builds bench/egress-bench.ts and runs it with the arguments (../../bench-runner.mjs).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'egress-bench.ts'), {
  // Three levels below the root, so node_modules resolve and load.cjs is found from the bundle.
  dir: join(import.meta.dirname, '../../node_modules/.cache'),
  external: true,
});
