// Builds bench/tracing.bench.ts and runs it with the arguments (../../bench-runner.mjs): what
// tracing costs a gateway exec, off versus on (make bench-gateway-tracing). The bundle spawns
// itself as the two gateway child processes.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'tracing.bench.ts'), {
  dir: join(import.meta.dirname, '../node_modules/.cache'),
  external: true,
});
