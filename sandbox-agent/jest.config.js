import { preset } from '../jest.preset.js';

// Two workers, not jest's default of cores - 1 (one here): the agent's unit files spend most of
// their time waiting on the bash processes, timers and sockets they start; on 2 cores the suite
// went from 111 s (one worker, clean-clone CI of 2026-12-06) to 74 s (two, under a running bench).
export default { ...preset(import.meta.dirname), maxWorkers: 2 };
