// Builds bench/pool.bench.ts (the packages of node_modules left external: client-node loads
// CommonJS modules an ESM bundle cannot require) and runs it with the arguments
// (../../bench-runner.mjs). Needs the platform on the local cluster: `make bench-pool`.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'pool.bench.ts'), {
  dir: join(import.meta.dirname, '../../node_modules/.cache'),
  external: true,
});
