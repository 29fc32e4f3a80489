// Builds bench/e2b.bench.ts and runs it with the arguments (../../bench-runner.mjs). The packages of
// node_modules stay external (the e2b SDK among them), so the bundle is written under
// node_modules/.cache to resolve them from there. Needs the platform on the local cluster:
// `make bench-e2b`.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'e2b.bench.ts'), {
  dir: join(import.meta.dirname, '../../node_modules/.cache'),
  external: true,
});
