#!/usr/bin/env node
/**
 * The sandbox container's entrypoint (bundled by esbuild into one file).
 *   sandbox-agent         serve: config from the environment, listen, stop gracefully on SIGTERM
 *   sandbox-agent probe          readiness probe: exit 0 when /healthz on loopback is 200
 *   sandbox-agent probe --live   liveness probe: exit 0 when /livez on loopback is 200
 */
import { startAgent } from './agent.js';
import { ENV, loadConfig } from './config.js';
import { createLogger, errorMessage } from './log.js';
import { runProbe } from './probe.js';

async function serve(): Promise<void> {
  const bootLog = createLogger('info');
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    bootLog.error(errorMessage(err));
    process.exit(1);
  }
  // The session's env is the user's bash's business (config.sessionEnv); the agent keeps none of
  // it, so nothing the agent starts (or any later reader of process.env) sees the carriers.
  for (const name of Object.keys(process.env)) {
    if (name.startsWith(ENV.sessionEnvPrefix)) delete process.env[name];
  }
  const agent = await startAgent(config).catch((err: unknown) => {
    const cause = err instanceof Error && err.cause !== undefined ? `: ${errorMessage(err.cause)}` : '';
    bootLog.error(`cannot start the agent: ${errorMessage(err)}${cause}`);
    process.exit(1);
  });
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    bootLog.info('signal received', { signal });
    agent.close().then(
      () => process.exit(0),
      (err: unknown) => {
        bootLog.error('shutdown failed', { error: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const command = process.argv[2];
const probeArgs = process.argv.slice(3);
if (
  command === 'probe' &&
  (probeArgs.length === 0 || (probeArgs.length === 1 && probeArgs[0] === '--live'))
) {
  process.exitCode = await runProbe(process.env, probeArgs[0] === '--live' ? 'live' : 'ready');
} else if (command === undefined || command === 'serve') {
  await serve();
} else {
  process.stderr.write(`usage: sandbox-agent [serve | probe [--live]]\n`);
  process.exitCode = 2;
}
