/**
 * The lean JSON client and the shared authentication against a local HTTP server standing in for
 * the API server: the body goes out as JSON with the KubeConfig's credentials and the write's
 * content type, 2xx answers come back parsed, other answers become client-node ApiExceptions that
 * kube/errors.ts reads like those of the generated clients, and credentials are re-applied at most
 * once per AUTH_REUSE_MS.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import * as k8s from '@kubernetes/client-node';

import { AUTH_REUSE_MS, createKubeClients } from '../../../src/kube/clients.js';
import { apiErrorInfo, isNotFound } from '../../../src/kube/errors.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const seen: Seen[] = [];
let answer: { code: number; body: string; delayMs?: number } = { code: 201, body: '{}' };
let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const { code, body, delayMs } = answer;
      setTimeout(() => res.writeHead(code, { 'content-type': 'application/json' }).end(body), delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** A KubeConfig for the local server whose token can be changed between calls. */
function kubeConfig(token: () => string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  // The token as an auth provider would set it, re-read on every apply.
  Object.defineProperty(kc.getCurrentUser()!, 'token', { get: token });
  return kc;
}

describe('JsonClient', () => {
  it('POSTs the body as JSON with the credentials and resolves with the parsed answer', async () => {
    seen.length = 0;
    answer = { code: 201, body: JSON.stringify({ metadata: { name: 'p', uid: 'u1' } }) };
    const { json } = createKubeClients(
      kubeConfig(() => 't1'),
      { timeoutMs: 5000 },
    );
    const created = await json.create('/api/v1/namespaces/ns/pods', { metadata: { name: 'p' } });
    expect(created).toEqual({ metadata: { name: 'p', uid: 'u1' } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/namespaces/ns/pods' });
    expect(seen[0]!.headers).toMatchObject({
      authorization: 'Bearer t1',
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(JSON.parse(seen[0]!.body)).toEqual({ metadata: { name: 'p' } });
  });

  it('PATCHes with the merge-patch content type', async () => {
    seen.length = 0;
    answer = { code: 200, body: JSON.stringify({ metadata: { resourceVersion: '9' } }) };
    const { json } = createKubeClients(
      kubeConfig(() => 't1'),
      { timeoutMs: 5000 },
    );
    await json.mergePatch('/apis/g/v/namespaces/ns/xs/a/status', { status: { phase: 'Pending' } });
    expect(seen[0]).toMatchObject({ method: 'PATCH', url: '/apis/g/v/namespaces/ns/xs/a/status' });
    expect(seen[0]!.headers['content-type']).toBe('application/merge-patch+json');
  });

  it('rejects a non-2xx answer with an ApiException carrying the code and the Status', async () => {
    answer = {
      code: 404,
      body: JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'namespaces "ns" not found' }),
    };
    const { json } = createKubeClients(
      kubeConfig(() => 't1'),
      { timeoutMs: 5000 },
    );
    const err = await json.create('/api/v1/namespaces/ns/secrets', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(k8s.ApiException);
    expect(isNotFound(err)).toBe(true);
    expect(apiErrorInfo(err)).toEqual({
      code: 404,
      reason: 'NotFound',
      message: 'namespaces "ns" not found',
    });
  });

  it('rejects a body that is not JSON, keeping the text', async () => {
    answer = { code: 502, body: '<html>bad gateway</html>' };
    const { json } = createKubeClients(
      kubeConfig(() => 't1'),
      { timeoutMs: 5000 },
    );
    const err = await json.create('/api/v1/namespaces/ns/secrets', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 502, body: '<html>bad gateway</html>' });
  });

  it('gives up after the timeout', async () => {
    answer = { code: 201, body: '{}', delayMs: 500 };
    const { json } = createKubeClients(
      kubeConfig(() => 't1'),
      { timeoutMs: 50 },
    );
    await expect(json.create('/api/v1/namespaces/ns/secrets', {})).rejects.toThrow(/abort|timeout/i);
  });
});

describe('shared authentication', () => {
  it('re-applies the credentials at most once per AUTH_REUSE_MS, for generated and JSON calls alike', async () => {
    seen.length = 0;
    answer = { code: 201, body: JSON.stringify({ metadata: {} }) };
    let token = 'old';
    let applied = 0;
    const clients = createKubeClients(
      kubeConfig(() => {
        applied++;
        return token;
      }),
      { timeoutMs: 5000 },
    );
    await clients.json.create('/api/v1/namespaces/ns/secrets', {});
    await clients.core.createNamespacedSecret({ namespace: 'ns', body: {} }).catch(() => undefined);
    token = 'new';
    await clients.json.create('/api/v1/namespaces/ns/secrets', {});
    // Only this test's calls: on a loaded machine the server may record a request of the test
    // before (aborted by its client after 50 ms, token t1) only now (a CI flake of 2026-12-07).
    const mine = (): string[] =>
      seen.map((s) => String(s.headers.authorization)).filter((a) => a !== 'Bearer t1');
    expect(mine()).toEqual(['Bearer old', 'Bearer old', 'Bearer old']);
    const appliedBefore = applied;
    await new Promise((r) => setTimeout(r, AUTH_REUSE_MS + 50));
    await clients.json.create('/api/v1/namespaces/ns/secrets', {});
    expect(mine().at(-1)).toBe('Bearer new');
    expect(applied).toBeGreaterThan(appliedBefore);
  });
});
