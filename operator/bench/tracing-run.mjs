// Builds bench/tracing-bench.ts and runs it with the arguments (../../bench-runner.mjs): what
// tracing costs a reconcile, off versus on (make bench-operator-tracing).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'tracing-bench.ts'), {
  // In the operator's node_modules/.cache: the bundle holds operator/src, whose packages must
  // resolve as the operator's do. From the root's node_modules, `ajv` was the hoisted 6.x (eslint's)
  // instead of the operator's 8.x ("Named export 'Ajv' not found", fresh-clone make bench of
  // 2026-12-06); what the operator does not have of its own still resolves from the root above.
  dir: join(import.meta.dirname, '../node_modules/.cache'),
  external: true,
});
