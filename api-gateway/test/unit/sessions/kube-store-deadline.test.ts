/**
 * Regression (CI of 285644c, chaos e2e): after a SIGKILL of the API server one session create was
 * held by the gateway until the client gave up (300 s): client-node puts no deadline on a REST
 * call, so a call whose connection stops answering waits forever. The store's REST calls now end
 * at `apiTimeoutMs` with 503 kubernetes-unavailable (Retry-After), and so do calls the API server
 * refuses at the TCP level or answers with 429/5xx. Checked against real sockets on loopback: a
 * server that accepts connections and never answers (the hang), and a closed port.
 */
import { createServer, type Server, type Socket } from 'node:net';

import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { ProblemError } from '../../../src/errors.js';
import { KubeSessionStore } from '../../../src/sessions/kube-store.js';
import { kubeFailure } from '../../../src/sessions/kube-errors.js';

const quiet = { info: (): void => undefined, warn: (): void => undefined, debug: (): void => undefined };

function kubeConfig(server: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'not-a-real-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

function session(name: string): SandboxSession {
  return {
    apiVersion: 'sandbox.dev/v1alpha1',
    kind: 'SandboxSession',
    metadata: { name, namespace: 'ns' },
    spec: { image: 'img' },
  } as unknown as SandboxSession;
}

/** The problem a promise rejects with (fails the test when it resolves or rejects otherwise). */
async function problemOf(p: Promise<unknown>): Promise<ProblemError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProblemError);
  return err as ProblemError;
}

describe('KubeSessionStore: a deadline on every REST call', () => {
  /** Accepts TCP connections and never sends a byte (not even a TLS handshake). */
  let blackHole: Server;
  const held: Socket[] = [];
  let blackHoleUrl = '';
  /** A port nobody listens on. */
  let closedUrl = '';

  beforeAll(async () => {
    blackHole = createServer((s) => held.push(s));
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
    blackHoleUrl = `https://127.0.0.1:${(blackHole.address() as { port: number }).port}`;
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedUrl = `https://127.0.0.1:${(probe.address() as { port: number }).port}`;
    await new Promise<void>((r) => probe.close(() => r()));
  });

  afterAll(async () => {
    for (const s of held) s.destroy();
    await new Promise<void>((r) => blackHole.close(() => r()));
  });

  const store = (url: string): KubeSessionStore =>
    new KubeSessionStore({ kubeConfig: kubeConfig(url), apiTimeoutMs: 300, namespaces: ['ns'], log: quiet });

  it('a create on a connection that never answers ends at the deadline: 503 kubernetes-unavailable', async () => {
    const p = await problemOf(store(blackHoleUrl).createOrGet(session('a')));
    expect({ slug: p.slug, status: p.status, retry: p.retryAfterSeconds }).toEqual({
      slug: 'kubernetes-unavailable',
      status: 503,
      retry: 2,
    });
    expect(p.detail).toBe(
      'create session: the Kubernetes API server did not answer within the deadline; retry shortly',
    );
    expect(held.length).toBeGreaterThan(0); // it did connect: the hang is past the TCP handshake
  });

  it('reads, suspends and deletes end at the deadline too', async () => {
    const s = store(blackHoleUrl);
    for (const call of [s.readFresh('ns', 'a'), s.setSuspended('ns', 'a', true), s.delete('ns', 'a')]) {
      expect((await problemOf(call)).slug).toBe('kubernetes-unavailable');
    }
  });

  it('a refused connection is kubernetes-unavailable at once, naming the error code only', async () => {
    const p = await problemOf(store(closedUrl).createOrGet(session('b')));
    expect(p.slug).toBe('kubernetes-unavailable');
    expect(p.detail).toBe(
      'create session: the Kubernetes API server could not be reached (ECONNREFUSED); retry shortly',
    );
    expect(p.detail).not.toContain('127.0.0.1');
  });
});

describe('kubeFailure', () => {
  const apiError = (code: number, message: string): Error =>
    Object.assign(new Error(`HTTP ${code}`), { code, body: JSON.stringify({ kind: 'Status', message }) });

  it('422 and 400: the caller’s, with the API server’s message', () => {
    const p = kubeFailure(apiError(422, 'spec.image: Required value'), 'create session') as ProblemError;
    expect([p.slug, p.detail]).toEqual(['invalid-request', 'spec.image: Required value']);
  });

  it('a ResourceQuota refusal is quota-exceeded with its message, other 403s stay internal', () => {
    const msg =
      'sandboxsessions.sandbox.dev "x" is forbidden: exceeded quota: q, requested: count/sandboxsessions.sandbox.dev=1, used: count/sandboxsessions.sandbox.dev=2, limited: count/sandboxsessions.sandbox.dev=2';
    const p = kubeFailure(apiError(403, msg), 'create session') as ProblemError;
    expect([p.slug, p.status, p.detail, p.extensions]).toEqual([
      'quota-exceeded',
      403,
      msg,
      { quota: 'resourcequota' },
    ]);
    const rbac = kubeFailure(apiError(403, 'forbidden: User cannot create'), 'create session');
    expect(rbac).not.toBeInstanceOf(ProblemError);
    expect(rbac.message).toBe('create session: Kubernetes API call failed (HTTP 403)');
  });

  it('429 and 5xx answers are kubernetes-unavailable; 404 and 409 are not (409 is conflict)', () => {
    for (const code of [429, 500, 502, 503, 504]) {
      const p = kubeFailure(apiError(code, 'x'), 'read session') as ProblemError;
      expect([p.slug, p.detail]).toEqual([
        'kubernetes-unavailable',
        `read session: the Kubernetes API server answered HTTP ${code}; retry shortly`,
      ]);
    }
    expect(kubeFailure(apiError(404, 'x'), 'a')).not.toBeInstanceOf(ProblemError);
    expect((kubeFailure(apiError(409, 'x'), 'a') as ProblemError).slug).toBe('conflict');
  });
});
