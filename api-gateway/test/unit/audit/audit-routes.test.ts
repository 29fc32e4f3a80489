/**
 * The gateway's audit hooks and the egress/audit routes with fakes behind the sink and the rule
 * writer: one record per exec, file write, process start, terminal open (not tested here: needs
 * an agent), port request and MCP tool doing one of those; none for another tenant's namespace;
 * PUT egress validated by the CRD's schema and audited; the audit routes pass through.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { AuditEvent, AuditVerification, SandboxSession } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

import type { AuditSink } from '../../../src/audit/client.js';
import type { EgressRuleWriter, EgressSpec } from '../../../src/audit/egress-writer.js';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { WinstonFastifyLogger, silentWinston } from '../../../src/logger.js';
import { auth, FakeActivity, KEYS, TEST_ENV, testKeys } from '../../helpers/app.js';
import { FakeStore } from '../../helpers/fake-store.js';
import { FakeTransport } from '../../helpers/fake-transport.js';
import { session } from '../../helpers/sessions.js';

class RecordingSink implements AuditSink {
  readonly events: AuditEvent[] = [];
  record(e: AuditEvent): void {
    this.events.push(e);
  }
  records(): Promise<{ records: never[]; lastSeq: null; nextSeq: number }> {
    return Promise.resolve({ records: [], lastSeq: null, nextSeq: 0 });
  }
  verify(): Promise<AuditVerification> {
    return Promise.resolve({
      valid: false,
      records: 3,
      firstSeq: 1,
      lastSeq: 3,
      brokenAt: 2,
      reason: 'hash-mismatch',
    });
  }
}

class FakeWriter implements EgressRuleWriter {
  readonly writes: Array<{ namespace: string; name: string; egress: EgressSpec }> = [];
  constructor(private readonly store: FakeStore) {}
  replace(namespace: string, name: string, egress: EgressSpec): Promise<SandboxSession | undefined> {
    this.writes.push({ namespace, name, egress });
    const s = this.store.get(namespace, name);
    return Promise.resolve(s ? { ...s, spec: { ...s.spec, egress } } : undefined);
  }
}

describe('audit hooks and egress routes', () => {
  let app: FastifyInstance;
  let sink: RecordingSink;
  let writer: FakeWriter;
  let store: FakeStore;

  beforeEach(async () => {
    store = new FakeStore();
    store.put(
      session('s1', 'team-a', (s) => {
        s.status = {
          podIP: '10.0.0.1',
          podName: 'sbs-s1',
          conditions: [
            { type: 'Ready', status: 'True', reason: 'PodReady', lastTransitionTime: '2030-01-01T00:00:00Z' },
          ],
        } as never;
      }),
    );
    sink = new RecordingSink();
    writer = new FakeWriter(store);
    app = await buildApp({
      config: loadConfig(TEST_ENV),
      logger: new WinstonFastifyLogger(silentWinston()),
      keys: await testKeys(),
      store,
      transports: { Agent: new FakeTransport(), KubernetesExec: new FakeTransport() },
      activity: new FakeActivity(),
      audit: { audit: sink, egressRules: writer },
    });
  });
  afterEach(() => app.close());

  it('records an exec and a file write of the key, with command and path, and not a read', async () => {
    await app.inject({
      method: 'POST',
      url: '/v1/sessions/s1/exec',
      headers: auth(KEYS.a),
      payload: { command: 'curl https://x' },
    });
    await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/files/a/b.txt',
      headers: { ...auth(KEYS.a), 'content-type': 'application/octet-stream' },
      payload: 'hello',
    });
    await app.inject({ method: 'GET', url: '/v1/sessions/s1/files/a/b.txt', headers: auth(KEYS.a) });
    expect(sink.events.map((e) => [e.kind, e.namespace, e.session, e.actor])).toEqual([
      ['exec', 'team-a', 's1', 'a'],
      ['file.write', 'team-a', 's1', 'a'],
    ]);
    expect(sink.events[0]!.detail).toMatchObject({ command: 'curl https://x' });
    expect(sink.events[1]!.detail).toMatchObject({ path: 'a/b.txt', bytes: 5 });
  });

  it('writes nothing for a namespace the key may not use, nor without a key', async () => {
    await app.inject({
      method: 'POST',
      url: '/v1/sessions/s1/exec?namespace=team-b',
      headers: auth(KEYS.a),
      payload: { command: 'id' },
    });
    await app.inject({ method: 'POST', url: '/v1/sessions/s1/exec', payload: { command: 'id' } });
    expect(sink.events).toEqual([]);
  });

  it('records a process start and an MCP exec', async () => {
    await app.inject({
      method: 'POST',
      url: '/v1/sessions/s1/processes',
      headers: auth(KEYS.a),
      payload: { command: 'sleep 1' },
    });
    await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...auth(KEYS.a), accept: 'application/json, text/event-stream' },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'exec', arguments: { session: 's1', command: 'ls' } },
      },
    });
    expect(sink.events.map((e) => [e.kind, e.detail.command])).toEqual([
      ['process.start', 'sleep 1'],
      ['exec', 'ls'],
    ]);
    expect(sink.events[1]!.detail.via).toBe('mcp');
  });

  it('PUT egress replaces the rules through the writer, validates them and is audited', async () => {
    const egress = { rules: [{ host: 'pypi.org', ports: [443] }], inheritNamespaceDefaults: false };
    const ok = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/egress',
      headers: auth(KEYS.a),
      payload: egress,
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ name: 's1', namespace: 'team-a', egress });
    expect(writer.writes).toEqual([{ namespace: 'team-a', name: 's1', egress }]);
    expect(sink.events.find((e) => e.kind === 'egress.rules')?.detail).toMatchObject({
      hosts: 'pypi.org',
      rules: 1,
    });
    const bad = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/egress',
      headers: auth(KEYS.a),
      payload: { rules: [{ host: 'Not A Host' }] },
    });
    expect(bad.statusCode).toBe(400);
    const missing = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/nope/egress',
      headers: auth(KEYS.a),
      payload: egress,
    });
    expect(missing.statusCode).toBe(404);
  });

  it('the audit routes answer from the sink', async () => {
    const v = await app.inject({ method: 'GET', url: '/v1/sessions/s1/audit/verify', headers: auth(KEYS.a) });
    expect(v.json()).toMatchObject({ valid: false, brokenAt: 2, reason: 'hash-mismatch' });
    const r = await app.inject({
      method: 'GET',
      url: '/v1/sessions/s1/audit?limit=5',
      headers: auth(KEYS.a),
    });
    expect(r.json()).toEqual({ records: [], lastSeq: null, nextSeq: 0 });
  });
});
