import { describe, expect, it } from '@jest/globals';

import { ConfigError, ENV_SCHEMA, loadConfig } from '../../src/config.js';

const REQUIRED = { SANDBOX_MASTER_KEY_FILE: '/etc/sandbox/master-key', POD_NAMESPACE: 'sandbox-system' };

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig(REQUIRED, 'host-1');
    expect(c).toMatchObject({
      masterKeyFile: '/etc/sandbox/master-key',
      watchNamespaces: [],
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
    expect(c.watchNamespaces).toEqual(['team-a']);
    expect(c.identity).toBe('op-0');
  });

  describe('watched namespaces', () => {
    const watched = (env: Record<string, string>): readonly string[] =>
      loadConfig({ ...REQUIRED, ...env }).watchNamespaces;

    it('WATCH_NAMESPACES lists them (sorted); WATCH_NAMESPACE is an alias for one', () => {
      expect(watched({ WATCH_NAMESPACES: 'team-b,team-a' })).toEqual(['team-a', 'team-b']);
      expect(watched({ WATCH_NAMESPACE: 'team-a' })).toEqual(['team-a']);
      expect(watched({ WATCH_NAMESPACES: 'team-a', WATCH_NAMESPACE: 'team-a' })).toEqual(['team-a']);
      expect(watched({ WATCH_NAMESPACES: '', WATCH_NAMESPACE: '' })).toEqual([]);
    });

    it('rejects both set and different', () => {
      for (const env of [
        { WATCH_NAMESPACES: 'team-a,team-b', WATCH_NAMESPACE: 'team-a' },
        { WATCH_NAMESPACES: 'team-b', WATCH_NAMESPACE: 'team-a' },
      ]) {
        expect(() => watched(env)).toThrow(/WATCH_NAMESPACE and WATCH_NAMESPACES are both set and differ/);
      }
    });

    it.each(['team-a,,team-b', 'Team-A', 'team-a, team-b', 'team-a,', '-a', 'a'.repeat(64)])(
      'rejects %p (not a list of DNS labels)',
      (value) => expect(() => watched({ WATCH_NAMESPACES: value })).toThrow(/WATCH_NAMESPACES/),
    );

    it('rejects a namespace named twice', () => {
      expect(() => watched({ WATCH_NAMESPACES: 'team-a,team-a' })).toThrow(/names a namespace twice/);
    });
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

  describe('default runtime class of sessions', () => {
    const runtimeClass = (value?: string): string | undefined =>
      loadConfig({ ...REQUIRED, SANDBOX_DEFAULT_RUNTIME_CLASS_NAME: value }).pod.defaultRuntimeClassName;

    it('is off unless set, and taken as given when a DNS subdomain', () => {
      expect(runtimeClass()).toBeUndefined();
      expect(runtimeClass('')).toBeUndefined();
      expect(runtimeClass('gvisor')).toBe('gvisor');
      expect(runtimeClass('kata.io-1')).toBe('kata.io-1');
    });

    it.each([
      'gVisor',
      'run_sc',
      '-gvisor',
      'gvisor.',
      'a..b',
      'a b',
      Array(4).fill('a'.repeat(63)).join('.'),
    ])('rejects %p (not a DNS subdomain)', (value) =>
      expect(() => runtimeClass(value)).toThrow(/SANDBOX_DEFAULT_RUNTIME_CLASS_NAME/),
    );
  });

  describe('egress proxy URL of sandbox Pods', () => {
    const proxyUrl = (value?: string): string | undefined =>
      loadConfig({ ...REQUIRED, SANDBOX_EGRESS_PROXY_URL: value }).pod.egressProxyUrl;

    it('is off unless set; an http URL of a host name and port is taken as given', () => {
      expect(proxyUrl()).toBeUndefined();
      expect(proxyUrl('')).toBeUndefined();
      const url = 'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc.cluster.local:3128';
      expect(proxyUrl(url)).toBe(url);
    });

    it.each([
      'https://proxy:3128',
      'http://user:pw@proxy:3128',
      'proxy:3128',
      'http://proxy:3128/x',
      'http://Proxy',
    ])('rejects %p', (value) => expect(() => proxyUrl(value)).toThrow(/SANDBOX_EGRESS_PROXY_URL/));
  });

  describe('sandbox DNS through the egress proxy (SANDBOX_EGRESS_DNS)', () => {
    const URL_ = 'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc:3128';
    const dns = (env: Record<string, string>): boolean =>
      loadConfig({ ...REQUIRED, ...env }).egressDnsFromProxy;

    it("is on only as 'proxy' with a proxy URL", () => {
      expect(dns({})).toBe(false);
      expect(dns({ SANDBOX_EGRESS_DNS: 'proxy' })).toBe(false);
      expect(dns({ SANDBOX_EGRESS_DNS: '', SANDBOX_EGRESS_PROXY_URL: URL_ })).toBe(false);
      expect(dns({ SANDBOX_EGRESS_DNS: 'proxy', SANDBOX_EGRESS_PROXY_URL: URL_ })).toBe(true);
    });

    it('rejects another value', () =>
      expect(() => dns({ SANDBOX_EGRESS_DNS: 'cluster' })).toThrow(/SANDBOX_EGRESS_DNS/));
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
