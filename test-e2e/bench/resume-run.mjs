// Builds bench/resume.bench.ts (every package bundled, in the OS temp dir) and runs it with the
// arguments (../../bench-runner.mjs). Needs the platform on the local cluster: `make bench-resume`.
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'resume.bench.ts'));
