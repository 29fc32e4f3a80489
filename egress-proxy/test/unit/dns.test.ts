/**
 * The sandboxes' DNS: the wire format (a query parsed, an answer built, hostile messages refused
 * without a throw), the responder's decisions (allowed names resolve through the proxy's lookup,
 * every other name is NXDOMAIN and audited once, the proxy's own name always resolves, an address
 * that is no sandbox is refused, blocked addresses never answered, lookups bounded), and the UDP
 * and TCP servers read by real resolvers: Node's c-ares over UDP and a raw TCP exchange.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { connect, type AddressInfo } from 'node:net';

import { DnsResponder, type DnsRefusal, type ResolveAll } from '../../src/dns/responder.js';
import { startDnsServers, type DnsServers } from '../../src/dns/server.js';
import { buildAnswer, parseQuery, QTYPE, RCODE, type DnsQuery } from '../../src/dns/wire.js';
import type { EgressRule } from '../../src/rules.js';
import type { SandboxIdentity, SessionResolver } from '../../src/sessions.js';

const SESSION: SandboxIdentity = { namespace: 'team-a', name: 's1', uid: 'u1' };
const SANDBOX_IP = '10.0.0.7';

/** A query for `name` of `qtype`, as a stub resolver sends it. */
function query(name: string, qtype: number, id = 0x1234): Buffer {
  const labels = name.split('.').filter(Boolean);
  const parts = labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')]));
  const head = Buffer.alloc(12);
  head.writeUInt16BE(id, 0);
  head.writeUInt16BE(0x0100, 2); // RD
  head.writeUInt16BE(1, 4);
  const tail = Buffer.alloc(5);
  tail.writeUInt16BE(qtype, 1);
  tail.writeUInt16BE(1, 3);
  return Buffer.concat([head, ...parts, tail]);
}

/** The rcode and the addresses of an answer (A and AAAA records only). */
function decode(answer: Buffer): { id: number; rcode: number; tc: boolean; addresses: string[] } {
  const flags = answer.readUInt16BE(2);
  const an = answer.readUInt16BE(6);
  let at = 12;
  if (answer.readUInt16BE(4) > 0) {
    while (at < answer.length && answer[at] !== 0) at += 1 + answer[at]!;
    at += 5;
  }
  const addresses: string[] = [];
  for (let i = 0; i < an; i++) {
    const type = answer.readUInt16BE(at + 2);
    const len = answer.readUInt16BE(at + 10);
    const data = answer.subarray(at + 12, at + 12 + len);
    addresses.push(
      type === QTYPE.a
        ? [...data].join('.')
        : [...Array(8).keys()].map((g) => data.readUInt16BE(g * 2).toString(16)).join(':'),
    );
    at += 12 + len;
  }
  return { id: answer.readUInt16BE(0), rcode: flags & 0xf, tc: (flags & 0x0200) !== 0, addresses };
}

describe('DNS wire format', () => {
  it('parses a query and answers it with its id, question and records', () => {
    const parsed = parseQuery(query('Pypi.Org', QTYPE.a, 77));
    expect('query' in parsed).toBe(true);
    const q = (parsed as { query: DnsQuery }).query;
    expect(q).toMatchObject({ id: 77, name: 'Pypi.Org', qtype: QTYPE.a, qclass: 1, rd: true });
    const a = decode(
      buildAnswer(q, { rcode: RCODE.noError, addresses: ['1.2.3.4', '::1', '5.6.7.8'], ttl: 30 }),
    );
    expect(a).toEqual({ id: 77, rcode: 0, tc: false, addresses: ['1.2.3.4', '5.6.7.8'] });
    const q6 = (parseQuery(query('x.org', QTYPE.aaaa)) as { query: DnsQuery }).query;
    expect(decode(buildAnswer(q6, { rcode: 0, addresses: ['1.2.3.4', '2001:db8::1'] })).addresses).toEqual([
      '2001:db8:0:0:0:0:0:1',
    ]);
  });

  it('truncates an answer that does not fit and sets TC', () => {
    const q = (parseQuery(query('many.example', QTYPE.a)) as { query: DnsQuery }).query;
    const addresses = [...Array(60).keys()].map((i) => `10.0.0.${i}`);
    const out = buildAnswer(q, { rcode: 0, addresses });
    expect(out.length).toBeLessThanOrEqual(512);
    const a = decode(out);
    expect(a.tc).toBe(true);
    expect(a.addresses.length).toBeGreaterThan(10);
    expect(a.addresses.length).toBeLessThan(60);
  });

  it.each([
    ['empty', Buffer.alloc(0), undefined],
    ['short header', Buffer.alloc(11), undefined],
    ['an answer (QR set)', Buffer.from([0, 1, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]), undefined],
    ['two questions', Buffer.from([0, 1, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]), 1],
    ['a compression pointer', Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1]), 1],
    ['a label past the end', Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 9, 0x61]), 1],
    ['no type and class', Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 0]), 1],
    ['a name over 255 bytes', query(Array(9).fill('a'.repeat(60)).join('.'), 1), 0x1234],
    ['over 1 KiB', Buffer.alloc(2000), undefined],
  ])('refuses %s without throwing', (_label, msg, id) => {
    const r = parseQuery(msg);
    expect('error' in r).toBe(true);
    expect((r as { id?: number }).id).toBe(id);
  });
});

describe('DNS responder', () => {
  let rules: EgressRule[] = [];
  let known = new Map<string, SandboxIdentity>();
  const refused: DnsRefusal[] = [];
  const looked: string[] = [];
  const sessions: SessionResolver = { byAddress: (ip) => known.get(ip), rules: () => rules };
  const table: Record<string, LookupAddress[]> = {
    'pypi.org': [
      { address: '151.101.0.223', family: 4 },
      { address: '2a04:4e42::223', family: 6 },
    ],
    'files.pythonhosted.org': [{ address: '151.101.1.63', family: 4 }],
  };
  const resolve: ResolveAll = (name) => {
    looked.push(name);
    const hit = table[name];
    if (hit) return Promise.resolve(hit);
    const code = name === 'meta.test' ? 'EGRESS_BLOCKED' : 'ENOTFOUND';
    return Promise.reject(Object.assign(new Error(`${name} not found`), { code }));
  };
  const resolveSelf: ResolveAll = () => Promise.resolve([{ address: '10.96.0.50', family: 4 }]);
  let now = 0;
  const responder = (over: Partial<ConstructorParameters<typeof DnsResponder>[0]> = {}): DnsResponder =>
    new DnsResponder({
      sessions,
      resolve,
      resolveSelf,
      selfNames: ['egress-proxy.platform.svc', 'egress-proxy.platform.svc.cluster.local.'],
      ttlSeconds: 30,
      onRefused: (r) => refused.push(r),
      unknownSourceWaitMs: 120,
      now: () => now,
      ...over,
    });
  const ask = async (r: DnsResponder, name: string, qtype: number = QTYPE.a, ip = SANDBOX_IP) =>
    decode((await r.answer(query(name, qtype), ip))!);

  beforeAll(() => {
    known = new Map([[SANDBOX_IP, SESSION]]);
  });

  it('answers a name the rules allow (exact and wildcard, any port), A and AAAA apart', async () => {
    rules = [{ host: 'pypi.org', ports: [8443] }, { host: '*.pythonhosted.org' }];
    const r = responder();
    expect(await ask(r, 'PYPI.org.')).toMatchObject({ rcode: RCODE.noError, addresses: ['151.101.0.223'] });
    expect((await ask(r, 'pypi.org', QTYPE.aaaa)).addresses).toEqual(['2a04:4e42:0:0:0:0:0:223']);
    expect(await ask(r, 'files.pythonhosted.org')).toMatchObject({ rcode: 0, addresses: ['151.101.1.63'] });
    // Another type of an allowed name: an empty answer, not NXDOMAIN.
    expect(await ask(r, 'pypi.org', 16)).toMatchObject({ rcode: RCODE.noError, addresses: [] });
    expect(refused).toEqual([]);
  });

  it('answers NXDOMAIN for every other name, cluster names included, and audits it once a minute', async () => {
    rules = [{ host: '*.pythonhosted.org' }];
    refused.length = 0;
    const r = responder();
    for (const name of [
      'pythonhosted.org', // a wildcard matches strictly below its suffix
      'kubernetes.default.svc.cluster.local',
      'secret-data.attacker.example',
      '10.0.0.1',
      '_sip._tcp.example.com',
    ])
      expect(await ask(r, name)).toMatchObject({ rcode: RCODE.nxDomain, addresses: [] });
    expect(looked).not.toContain('kubernetes.default.svc.cluster.local');
    expect(refused.map((x) => x.name)).toEqual([
      'pythonhosted.org',
      'kubernetes.default.svc.cluster.local',
      'secret-data.attacker.example',
      '10.0.0.1',
      '_sip._tcp.example.com',
    ]);
    await ask(r, 'secret-data.attacker.example', QTYPE.aaaa);
    expect(refused).toHaveLength(5);
    now += 61_000;
    await ask(r, 'secret-data.attacker.example');
    expect(refused).toHaveLength(6);
    expect(refused[5]).toEqual({ session: SESSION, name: 'secret-data.attacker.example', qtype: QTYPE.a });
  });

  it("always answers the proxy's own names, with its Service address", async () => {
    rules = [];
    const r = responder();
    expect(await ask(r, 'egress-proxy.platform.svc')).toMatchObject({ rcode: 0, addresses: ['10.96.0.50'] });
    expect(await ask(r, 'egress-proxy.platform.svc.cluster.local')).toMatchObject({
      addresses: ['10.96.0.50'],
    });
  });

  it('answers NXDOMAIN for an allowed name that does not exist or resolves only to blocked addresses', async () => {
    rules = [{ host: 'missing.example' }, { host: 'meta.test' }];
    const r = responder();
    expect((await ask(r, 'missing.example')).rcode).toBe(RCODE.nxDomain);
    expect((await ask(r, 'meta.test')).rcode).toBe(RCODE.nxDomain);
  });

  it('refuses an address that is no sandbox, after waiting briefly for the index', async () => {
    const r = responder({ now: undefined });
    const t0 = Date.now();
    expect((await ask(r, 'pypi.org', QTYPE.a, '10.9.9.9')).rcode).toBe(RCODE.refused);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    // A Pod the index learns of while its first query waits is answered.
    rules = [{ host: 'pypi.org' }];
    setTimeout(() => known.set('10.9.9.8', SESSION), 30);
    expect((await ask(r, 'pypi.org', QTYPE.a, '10.9.9.8')).rcode).toBe(RCODE.noError);
  });

  it('caches an answer for its TTL and looks a name up once while queries wait for it', async () => {
    rules = [{ host: 'pypi.org' }];
    looked.length = 0;
    const r = responder();
    await Promise.all([ask(r, 'pypi.org'), ask(r, 'pypi.org', QTYPE.aaaa), ask(r, 'pypi.org')]);
    await ask(r, 'pypi.org');
    expect(looked).toEqual(['pypi.org']);
    now += 31_000;
    await ask(r, 'pypi.org');
    expect(looked).toEqual(['pypi.org', 'pypi.org']);
  });

  it('bounds the lookups one session has in flight (SERVFAIL beyond), others unaffected', async () => {
    rules = [{ host: '*.slow.example' }, { host: 'pypi.org' }];
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const r = responder({
      maxInFlightPerSession: 2,
      resolve: async (name) => {
        if (name.endsWith('.slow.example')) await gate;
        return resolve(name.endsWith('.slow.example') ? 'pypi.org' : name);
      },
    });
    known.set('10.0.0.8', { ...SESSION, name: 's2' });
    const slow = [ask(r, 'a.slow.example'), ask(r, 'b.slow.example')];
    expect((await ask(r, 'c.slow.example')).rcode).toBe(RCODE.servFail);
    expect((await ask(r, 'pypi.org', QTYPE.a, '10.0.0.8')).rcode).toBe(RCODE.noError);
    release();
    expect((await Promise.all(slow)).map((a) => a.rcode)).toEqual([0, 0]);
  });

  it('answers FORMERR to a query it cannot read and nothing to garbage', async () => {
    const r = responder();
    const bad = await r.answer(Buffer.from([0, 9, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0]), SANDBOX_IP);
    expect(decode(bad!)).toMatchObject({ id: 9, rcode: RCODE.formErr });
    expect(await r.answer(Buffer.from('hello'), SANDBOX_IP)).toBeUndefined();
  });
});

describe('DNS servers', () => {
  let servers: DnsServers;
  let port: number;
  const rules: EgressRule[] = [{ host: 'allowed.example' }];

  beforeAll(async () => {
    const responder = new DnsResponder({
      sessions: { byAddress: (ip) => (ip === '127.0.0.1' ? SESSION : undefined), rules: () => rules },
      resolve: (name) =>
        name === 'allowed.example'
          ? Promise.resolve([{ address: '192.0.2.10', family: 4 }])
          : Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' })),
      resolveSelf: () => Promise.resolve([]),
      selfNames: [],
      ttlSeconds: 30,
      onRefused: () => undefined,
    });
    servers = await startDnsServers(responder, 0, '127.0.0.1', (msg, err) => {
      throw new Error(`${msg}: ${String(err)}`);
    });
    port = servers.udp.address().port;
    // The TCP listener took its own port 0: point both tests at what each got.
  });

  afterAll(async () => {
    await servers.close();
  });

  it('answers a real resolver over UDP (c-ares): an allowed name, and NXDOMAIN for another', async () => {
    const resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([`127.0.0.1:${port}`]);
    expect(await resolver.resolve4('allowed.example', { ttl: true })).toEqual([
      { address: '192.0.2.10', ttl: 30 },
    ]);
    await expect(resolver.resolve4('kubernetes.default.svc.cluster.local')).rejects.toMatchObject({
      code: 'ENOTFOUND',
    });
  });

  it('answers two pipelined queries over TCP, each length-prefixed', async () => {
    const tcpPort = (servers.tcp.address() as AddressInfo).port;
    const sock = connect(tcpPort, '127.0.0.1');
    const frame = (b: Buffer): Buffer => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b]);
    sock.write(
      Buffer.concat([frame(query('allowed.example', QTYPE.a, 1)), frame(query('other.example', QTYPE.a, 2))]),
    );
    let got = Buffer.alloc(0);
    const answers = await new Promise<Buffer[]>((resolve, reject) => {
      sock.on('error', reject);
      sock.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        const out: Buffer[] = [];
        let at = 0;
        while (got.length >= at + 2 && got.length >= at + 2 + got.readUInt16BE(at)) {
          out.push(got.subarray(at + 2, at + 2 + got.readUInt16BE(at)));
          at += 2 + got.readUInt16BE(at);
        }
        if (out.length === 2) resolve(out);
      });
    });
    sock.destroy();
    expect(answers.map(decode)).toEqual([
      { id: 1, rcode: 0, tc: false, addresses: ['192.0.2.10'] },
      { id: 2, rcode: RCODE.nxDomain, tc: false, addresses: [] },
    ]);
  });
});
