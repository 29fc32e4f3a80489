/** Builds the gateway with fakes behind every port, for inject() tests. */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

import type { ActivityReporter, ActivitySubject } from '../../src/activity/reporter.js';
import { buildApp } from '../../src/app.js';
import { ApiKeys } from '../../src/auth/keys.js';
import { loadConfig, type GatewayConfig } from '../../src/config.js';
import { WinstonFastifyLogger, silentWinston } from '../../src/logger.js';
import { FakeStore } from './fake-store.js';
import { FakeTransport } from './fake-transport.js';

/** API keys of the tests: tenant A (team-a), tenant B (team-b), and a key for both. */
export const KEYS = {
  a: 'key-for-team-a-0123456789abcdef',
  b: 'key-for-team-b-0123456789abcdef',
  both: 'key-for-both-teams-0123456789ab',
};

/** The key file of the tests (A stored as a hash, the others in plain). */
export const KEY_FILE = JSON.stringify({
  keys: [
    { id: 'a', sha256: '', namespaces: ['team-a'] },
    { id: 'b', key: KEYS.b, namespaces: ['team-b'] },
    { id: 'both', key: KEYS.both, namespaces: ['team-a', 'team-b'], defaultNamespace: 'team-b' },
  ],
});

/** Environment of a test config. */
export const TEST_ENV = {
  GATEWAY_API_KEYS_FILE: '/dev/null',
  SANDBOX_MASTER_KEY_FILE: '/dev/null',
  GATEWAY_NAMESPACES: 'team-a,team-b',
  GATEWAY_MAX_IDLE_TIMEOUT_SECONDS: '3600',
  GATEWAY_MAX_LIFETIME_SECONDS: '7200',
  GATEWAY_MAX_EXEC_TIMEOUT_SECONDS: '120',
  GATEWAY_DEFAULT_WAIT_SECONDS: '0',
  GATEWAY_MAX_WAIT_SECONDS: '5',
  GATEWAY_MAX_BODY_BYTES: '65536',
  GATEWAY_MAX_FILE_BYTES: '131072',
  // Off unless a test sets them: a busy test machine lags its event loop, and suites send bursts.
  GATEWAY_SHED_EVENT_LOOP_DELAY_MS: '0',
  GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '0',
  GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: '0',
};

/** Records activity calls. */
export class FakeActivity implements ActivityReporter {
  readonly touched: string[] = [];
  begun = 0;
  ended = 0;

  touch(s: ActivitySubject): void {
    this.touched.push(`${s.namespace}/${s.name}`);
  }

  begin(s: ActivitySubject): () => void {
    this.begun++;
    this.touch(s);
    return () => {
      this.ended++;
      this.touch(s);
    };
  }
}

/** The app and its fakes. */
export interface TestApp {
  app: FastifyInstance;
  store: FakeStore;
  agent: FakeTransport;
  kube: FakeTransport;
  activity: FakeActivity;
  config: GatewayConfig;
}

/** Parses the test key file (hashing key A like an operator would). */
export async function testKeys(): Promise<ApiKeys> {
  const { hashKey } = await import('../../src/auth/keys.js');
  const file = JSON.parse(KEY_FILE) as { keys: Array<Record<string, unknown>> };
  file.keys[0]!.sha256 = hashKey(KEYS.a);
  return ApiKeys.parse(JSON.stringify(file), ['team-a', 'team-b']);
}

/** Builds the app with fakes; `env` overrides the test environment; logs go nowhere unless `logger`. */
export async function buildTestApp(
  env: Record<string, string> = {},
  opts: { logger?: FastifyBaseLogger } = {},
): Promise<TestApp> {
  const config = loadConfig({ ...TEST_ENV, ...env });
  const store = new FakeStore();
  const agent = new FakeTransport();
  const kube = new FakeTransport();
  const activity = new FakeActivity();
  const app = await buildApp({
    config,
    logger: opts.logger ?? new WinstonFastifyLogger(silentWinston()),
    keys: await testKeys(),
    store,
    transports: { Agent: agent, KubernetesExec: kube },
    activity,
  });
  return { app, store, agent, kube, activity, config };
}

/** Authorization header of a key. */
export function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}
