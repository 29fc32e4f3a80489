/** The hostile agent (test-e2e/hostile-agent/hostile-agent.mjs) as a child process of a test. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Path of the hostile agent program. */
export const HOSTILE_AGENT = join(here, '../../../test-e2e/hostile-agent/hostile-agent.mjs');

/** A running hostile agent. */
export interface HostileAgent {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the hostile agent on host:port (port 0: any free port) and waits until it listens. */
export async function startHostileAgent(host = '127.0.0.1', port = 0): Promise<HostileAgent> {
  const child = spawn(process.execPath, [HOSTILE_AGENT], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: host },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const bound = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(out.slice(0, nl)) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`hostile agent exited (${code}) before listening`)));
  });
  return {
    port: bound,
    child,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
