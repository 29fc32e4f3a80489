/**
 * POST /v1/drops of the audit service (src/audit/drops.ts, server.ts) on a real store: only the
 * drop reporter's token is accepted there and it is accepted nowhere else; bodies are bounded in
 * bytes and drops and checked drop by drop; each drop from a session's sandbox Pod becomes one
 * chained `egress` record (denied, reason direct, the destination address, port and protocol);
 * drops from other addresses are counted and ignored; a session gets at most
 * DROPS_MAX_PER_SESSION records per call. Last, the reporter's HTTP sender against it.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DROPS_MAX_BYTES, DROPS_MAX_COUNT, DROPS_MAX_PER_SESSION } from '../../src/audit/drops.js';
import { auditServer } from '../../src/audit/server.js';
import { AuditStore } from '../../src/audit/store.js';
import type { WireDrop } from '../../src/drops/drop.js';
import { httpDropSender } from '../../src/drops/reporter.js';
import type { SandboxIdentity } from '../../src/sessions.js';

const KEY = Buffer.alloc(32, 7);
const NOW = Date.parse('2026-12-07T12:00:00.000Z');
const SESSIONS: Record<string, SandboxIdentity> = {
  '10.0.0.5': { namespace: 'team-a', name: 's1', uid: 'u1' },
  'fd00::5': { namespace: 'team-a', name: 's2', uid: 'u2' },
};
const tcp = (src: string, dport = 443, ageMs = 0): WireDrop => ({
  src,
  dst: '93.184.216.34',
  proto: 'tcp',
  sport: 40000,
  dport,
  ageMs,
});

describe('POST /v1/drops', () => {
  let dir: string;
  let store: AuditStore;
  let server: Server;
  let base: string;
  const asReporter = { authorization: 'Bearer drop-tok', 'content-type': 'application/json' };
  const asGateway = { authorization: 'Bearer gw-tok', 'content-type': 'application/json' };
  const post = (body: unknown, headers: Record<string, string> = asReporter) =>
    fetch(`${base}/v1/drops`, {
      method: 'POST',
      headers,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'audit-drops-'));
    store = new AuditStore({ dir, key: KEY, retentionSeconds: 3600, maxRecordsPerSession: 1000 });
    server = auditServer(store, 'gw-tok', () => undefined, {
      drops: { token: 'drop-tok', sessions: { byAddress: (ip) => SESSIONS[ip] }, clock: () => NOW },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it("takes the reporter's token only; the gateway's is refused there, and the reporter's everywhere else", async () => {
    expect((await post({ drops: [] }, asGateway)).status).toBe(401);
    expect((await post({ drops: [] }, {})).status).toBe(401);
    expect((await post({ drops: [] }, { authorization: 'Bearer drop-to' })).status).toBe(401);
    expect((await post({ drops: [] })).status).toBe(202);
    const gatewayCalls = [
      fetch(`${base}/v1/audit/events`, { method: 'POST', headers: asReporter, body: '{"events":[]}' }),
      fetch(`${base}/v1/audit/sessions/team-a/s1/records`, { headers: asReporter }),
      fetch(`${base}/v1/audit/sessions/team-a/s1/verify`, { headers: asReporter }),
    ];
    for (const res of await Promise.all(gatewayCalls)) expect(res.status).toBe(401);
    expect((await fetch(`${base}/v1/drops`, { headers: asReporter })).status).toBe(405);
    expect((await fetch(`${base}/v1/audit/sessions/team-a/s1/records`, { headers: asGateway })).status).toBe(
      200,
    );
  });

  it('without the drops option the path is not served: 404 to the gateway, 401 to the reporter', async () => {
    const plain = auditServer(store, 'gw-tok', () => undefined);
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/v1/drops`;
    try {
      expect((await fetch(url, { method: 'POST', headers: asGateway, body: '{"drops":[]}' })).status).toBe(
        404,
      );
      expect((await fetch(url, { method: 'POST', headers: asReporter, body: '{"drops":[]}' })).status).toBe(
        401,
      );
    } finally {
      await new Promise((r) => plain.close(r));
    }
  });

  it("records each drop of a session's Pod as a denied egress record; others are counted and ignored", async () => {
    const res = await post({
      drops: [
        tcp('10.0.0.5', 443, 1500),
        { src: 'fd00::5', dst: '2001:db8::1', proto: 'udp', sport: 5000, dport: 53, ageMs: 0 },
        { src: '10.0.0.5', dst: '10.96.0.1', proto: 'icmp', ageMs: 0 },
        tcp('10.0.0.77'), // no session's Pod
        tcp('198.18.0.9'),
      ],
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ recorded: 3, unknownSource: 2, capped: 0 });
    const s1 = await store.records('team-a', 's1', 0, 10);
    expect(s1.records.map(({ seq, prev, hash, ...r }) => (void seq, void prev, void hash, r))).toEqual([
      {
        time: '2026-12-07T11:59:58.500Z',
        namespace: 'team-a',
        session: 's1',
        kind: 'egress',
        actor: 'sandbox',
        outcome: 'denied',
        detail: {
          host: '93.184.216.34',
          port: 443,
          scheme: 'direct',
          proto: 'tcp',
          reason: 'direct',
          sourcePort: 40000,
        },
      },
      {
        time: '2026-12-07T12:00:00.000Z',
        namespace: 'team-a',
        session: 's1',
        kind: 'egress',
        actor: 'sandbox',
        outcome: 'denied',
        detail: {
          host: '10.96.0.1',
          port: null,
          scheme: 'direct',
          proto: 'icmp',
          reason: 'direct',
          sourcePort: null,
        },
      },
    ]);
    const s2 = await store.records('team-a', 's2', 0, 10);
    expect(s2.records[0]).toMatchObject({ detail: { host: '2001:db8::1', port: 53, proto: 'udp' } });
    expect((await store.verify('team-a', 's1')).valid).toBe(true);
  });

  it(`caps one call at ${DROPS_MAX_PER_SESSION} records per session, counting the rest`, async () => {
    const drops = [
      ...Array.from({ length: DROPS_MAX_PER_SESSION + 5 }, (_, i) => tcp('10.0.0.5', 1000 + i)),
      tcp('fd00::5'),
    ];
    const res = await post({ drops });
    expect(await res.json()).toEqual({ recorded: DROPS_MAX_PER_SESSION + 1, unknownSource: 0, capped: 5 });
    expect((await store.records('team-a', 's1', 0, 100)).records).toHaveLength(DROPS_MAX_PER_SESSION);
  });

  it('refuses an oversized body, too many drops, a bad drop (nothing recorded), and non-JSON', async () => {
    const big = await post(`{"drops":[],"pad":"${'x'.repeat(DROPS_MAX_BYTES)}"}`);
    expect(big.status).toBe(413);
    const many = await post({ drops: Array.from({ length: DROPS_MAX_COUNT + 1 }, () => tcp('10.0.0.5')) });
    expect(many.status).toBe(400);
    expect(((await many.json()) as { detail: string }).detail).toMatch(/at most 500/);
    for (const [bad, why] of [
      [{ ...tcp('10.0.0.5'), src: '10.0.0.5; rm -rf /' }, 'invalid src'],
      [{ ...tcp('10.0.0.5'), dport: 70000 }, 'invalid dport'],
      [{ ...tcp('10.0.0.5'), ageMs: 11 * 60_000 }, 'invalid ageMs'],
      [{ ...tcp('10.0.0.5'), ageMs: -1 }, 'invalid ageMs'],
      [{ src: '10.0.0.5', dst: '1.1.1.1', proto: 'tcp', sport: 1, dport: 2 }, 'invalid ageMs'],
      [{ ...tcp('10.0.0.5'), note: 'x' }, 'invalid unknown field note'],
    ] as const) {
      const res = await post({ drops: [tcp('10.0.0.5'), bad] });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { detail: string }).detail).toBe(`drops[1]: ${why}`);
    }
    expect((await post('{"drops":')).status).toBe(400);
    expect((await post({ drops: 'x' })).status).toBe(400);
    expect((await post('null')).status).toBe(400);
    expect((await store.records('team-a', 's1', 0, 10)).records).toHaveLength(0);
  });

  it("the reporter's HTTP sender: accepted batches answer the counts, an invalid one is not retried, a wrong token is", async () => {
    const send = httpDropSender({ auditUrl: base, token: 'drop-tok' });
    expect(await send([tcp('10.0.0.5'), tcp('10.0.0.77')])).toEqual({
      ok: true,
      answer: { recorded: 1, unknownSource: 1, capped: 0 },
    });
    const invalid = await send([{ ...tcp('10.0.0.5'), ageMs: -5 }]);
    expect(invalid).toMatchObject({ ok: false, retry: false });
    const wrong = await httpDropSender({ auditUrl: base, token: 'gw-tok' })([tcp('10.0.0.5')]);
    expect(wrong).toMatchObject({ ok: false, retry: true, reason: expect.stringMatching(/^HTTP 401/) });
    const down = await httpDropSender({ auditUrl: 'http://127.0.0.1:1', token: 'drop-tok' })([
      tcp('10.0.0.5'),
    ]);
    expect(down).toMatchObject({ ok: false, retry: true, reason: expect.stringMatching(/ECONNREFUSED/) });
  });
});
