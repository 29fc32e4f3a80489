/**
 * TLS interception on loopback: a client trusting only the namespace CA talks HTTPS through a
 * CONNECT tunnel; the proxy terminates TLS with a leaf for the CONNECT host, injects the
 * credential and forwards over verified TLS to an upstream whose certificate comes from another
 * CA. The upstream sees the header; the client's view (the leaf, the answer) does not hold it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Agent } from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer, type Server } from 'node:https';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

import type { AuditEvent } from '@sandbox-platform/api';

import { blockList, filteringLookup } from '../../src/dial.js';
import { TlsInterceptor } from '../../src/intercept.js';
import { EgressProxy } from '../../src/proxy.js';
import type { EgressRule } from '../../src/rules.js';
import { createCA, issueLeaf } from '../../src/tls/ca.js';

const SESSION = { namespace: 'team-a', name: 's1', uid: 'u1' };
const resolve = ((_h: string, _o: object, cb: (e: null, a: unknown) => void) =>
  cb(null, [{ address: '127.0.0.1', family: 4 }])) as never;

describe('TLS interception', () => {
  const nsCA = createCA('team-a egress CA');
  const upstreamCA = createCA('upstream test CA');
  let upstream: Server;
  let upPort: number;
  let proxy: EgressProxy;
  let proxyPort: number;
  let rules: EgressRule[] = [];
  const audit: AuditEvent[] = [];
  const seen: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const leaf = issueLeaf(upstreamCA, 'api.test');
    upstream = createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
      seen.push({ method: req.method, url: req.url, ...req.headers });
      res.end(`secure ${req.url}`);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upPort = (upstream.address() as AddressInfo).port;
    const lookup = filteringLookup(blockList(['169.254.0.0/16']), resolve);
    const sessions = { byAddress: (): typeof SESSION => SESSION, rules: (): EgressRule[] => rules };
    const forwardDeps = {
      httpAgent: new Agent({ keepAlive: true, lookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, lookup, ca: [upstreamCA.certPem] }),
      secrets: { read: (): Promise<string> => Promise.resolve('Bearer top-secret-value') },
      timeoutMs: 5000,
    };
    const p: { proxy?: EgressProxy } = {};
    const interceptor = new TlsInterceptor({
      ...forwardDeps,
      sessions,
      cas: { forNamespace: () => Promise.resolve(nsCA) },
      auditForward: (s, b, o) => p.proxy!.auditForward(s, b, o),
    });
    proxy = new EgressProxy({
      ...forwardDeps,
      sessions,
      audit: (e) => audit.push(e),
      lookup,
      interceptor,
      helloTimeoutMs: 2000,
      maxTunnelsPerSession: 8,
    });
    p.proxy = proxy;
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    proxyPort = (proxy.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    proxy.server.closeAllConnections();
    upstream.closeAllConnections();
    await Promise.all([new Promise((r) => proxy.server.close(r)), new Promise((r) => upstream.close(r))]);
  });

  /** A TLS connection through the proxy to api.test, trusting `ca`. */
  const tunnel = (ca: string): Promise<TLSSocket> =>
    new Promise((resolveTls, reject) => {
      const s = netConnect(proxyPort, '127.0.0.1', () =>
        s.write(`CONNECT api.test:${upPort} HTTP/1.1\r\n\r\n`),
      );
      s.once('error', reject);
      s.once('data', (d) => {
        if (!d.toString().startsWith('HTTP/1.1 200')) return reject(new Error(d.toString()));
        const t = tlsConnect({ socket: s, servername: 'api.test', ca: [ca] }, () => resolveTls(t));
        t.once('error', reject);
      });
    });

  const get = (t: TLSSocket, path: string, method = 'GET'): Promise<string> =>
    new Promise((r) => {
      let out = '';
      t.on('data', (c) => (out += c));
      t.on('end', () => r(out));
      t.write(
        `${method} ${path} HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer forged\r\nConnection: close\r\n\r\n`,
      );
    });

  it('injects the credential over verified TLS; the client trusts only the namespace CA and never sees it', async () => {
    rules = [
      {
        host: 'api.test',
        ports: [upPort],
        pathPrefixes: ['/v1/'],
        injectHeaders: [{ name: 'Authorization', secretKeyRef: { name: 'c', key: 'k' } }],
      },
    ];
    const t = await tunnel(nsCA.certPem);
    expect(t.getPeerX509Certificate()?.issuer).toBe('CN=team-a egress CA');
    const answer = await get(t, '/v1/models');
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    expect(answer).toContain('secure /v1/models');
    expect(answer).not.toContain('top-secret-value');
    expect(seen.at(-1)!.authorization).toBe('Bearer top-secret-value');
    const denied = await get(await tunnel(nsCA.certPem), '/admin');
    expect(denied).toMatch(/^HTTP\/1.1 403/);
    expect(
      audit
        .filter((e) => e.detail.scheme === 'https-intercepted')
        .map((e) => [e.outcome, e.detail.path, e.detail.injectedHeaders]),
    ).toEqual([
      ['allowed', '/v1/models', 1],
      ['denied', '/admin', 0],
    ]);
  });

  it('a client that does not trust the namespace CA refuses the leaf', async () => {
    await expect(tunnel(upstreamCA.certPem)).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });
});
