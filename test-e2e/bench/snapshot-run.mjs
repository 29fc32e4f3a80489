// Builds bench/snapshot.bench.ts (the packages of node_modules left external: client-node loads
// CommonJS modules an ESM bundle cannot require) and runs it with the arguments
// (../../bench-runner.mjs). Needs the platform on the local cluster: `make bench-snapshot`.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'snapshot.bench.ts'), {
  dir: join(import.meta.dirname, '../../node_modules/.cache'),
  external: true,
});
