// Builds bench/operator-bench.ts and runs it with the arguments (../../bench-runner.mjs); the
// operator itself runs from operator/dist (the bench builds it with tsc -b, as the integration
// tests do).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'operator-bench.ts'), {
  // In the repository's node_modules/.cache (ignored): the bundle's external packages resolve
  // from node_modules, and test-support's REPO_ROOT finds the repository root above it.
  dir: join(import.meta.dirname, '../../node_modules/.cache'),
  external: true,
});
