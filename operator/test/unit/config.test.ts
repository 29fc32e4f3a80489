import { describe, expect, it } from '@jest/globals';

import { ConfigError, ENV_SCHEMA, loadConfig } from '../../src/config.js';

const REQUIRED = { SANDBOX_MASTER_KEY_FILE: '/etc/sandbox/master-key', POD_NAMESPACE: 'sandbox-system' };

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig(REQUIRED, 'host-1');
    expect(c).toMatchObject({
      masterKeyFile: '/etc/sandbox/master-key',
      watchNamespace: '',
      concurrency: 16,
      resyncMs: 300_000,
      requeueFloorMs: 250,
      apiTimeoutMs: 30_000,
      http: { port: 8080, host: '0.0.0.0' },
      logLevel: 'info',
      shutdownTimeoutMs: 20_000,
      pod: {
        defaultImage: 'localhost/sandbox-platform/sandbox-agent:dev',
        defaultResources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
        defaultWorkspaceSize: '1Gi',
        runAsUser: 1000,
        terminationGracePeriodSeconds: 10,
      },
      leaderElection: {
        leaseName: 'sandbox-operator',
        leaseNamespace: 'sandbox-system',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
    expect(c.identity).toMatch(/^host-1_[0-9a-f]{8}$/);
  });

  it('coerces and validates typed values', () => {
    const c = loadConfig({
      ...REQUIRED,
      CONCURRENCY: '4',
      LEADER_ELECT: 'false',
      WATCH_NAMESPACE: 'team-a',
      POD_NAME: 'op-0',
    });
    expect(c.concurrency).toBe(4);
    expect(c.leaderElection).toBeUndefined();
    expect(c.watchNamespace).toBe('team-a');
    expect(c.identity).toBe('op-0');
  });

  it('fails fast, listing every problem', () => {
    const err = (() => {
      try {
        loadConfig({
          CONCURRENCY: '0',
          LOG_LEVEL: 'loud',
          SANDBOX_DEFAULT_CPU_LIMIT: 'lots',
          WATCH_NAMESPACE: 'Bad_NS',
        });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    for (const key of [
      'SANDBOX_MASTER_KEY_FILE',
      'CONCURRENCY',
      'LOG_LEVEL',
      'SANDBOX_DEFAULT_CPU_LIMIT',
      'WATCH_NAMESPACE',
    ]) {
      expect(message).toContain(key);
    }
  });

  it('rejects leader election without a namespace and inconsistent lease timings', () => {
    expect(() => loadConfig({ SANDBOX_MASTER_KEY_FILE: '/k' })).toThrow(/LEASE_NAMESPACE or POD_NAMESPACE/);
    expect(() => loadConfig({ ...REQUIRED, LEASE_RENEW_DEADLINE_SECONDS: '15' })).toThrow(
      /< LEASE_DURATION_SECONDS/,
    );
    expect(() => loadConfig({ ...REQUIRED, LEASE_RETRY_PERIOD_SECONDS: '10' })).toThrow(
      /< LEASE_RENEW_DEADLINE_SECONDS/,
    );
  });

  it('refuses running sandboxes as root', () => {
    expect(() => loadConfig({ ...REQUIRED, SANDBOX_RUN_AS_USER: '0' })).toThrow(/SANDBOX_RUN_AS_USER/);
  });

  it('documents every key', () => {
    for (const [key, schema] of Object.entries(ENV_SCHEMA.properties)) {
      expect([key, (schema as { description?: string }).description?.length ?? 0]).not.toEqual([key, 0]);
    }
  });
});
