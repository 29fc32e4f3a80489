// Builds bench/scale/scale.bench.ts (the packages of node_modules left external: client-node loads
// CommonJS modules an ESM bundle cannot require) and runs it with the arguments
// (../../../bench-runner.mjs). Needs the local cluster with simulated nodes: `make bench-scale`.
import { join } from 'node:path';

import { runBench } from '../../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'scale.bench.ts'), {
  // Under the repository root, where test-support's REPO_ROOT finds it from the bundle's place.
  dir: join(import.meta.dirname, '../../../node_modules/.cache'),
  external: true,
});
