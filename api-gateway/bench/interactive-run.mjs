// Builds bench/interactive.bench.ts and runs it with the arguments (../../bench-runner.mjs): the
// interactive routes (exec stream and port route throughput, port route p50) against direct calls
// (make bench-gateway-interactive).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'interactive.bench.ts'), {
  dir: join(import.meta.dirname, '../node_modules/.cache'),
  external: true,
});
