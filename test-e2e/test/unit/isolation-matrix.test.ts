import { execFile } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  cellResults,
  classify,
  failures,
  parseProbes,
  probeScript,
  runMatrix,
  verdict,
  type Outcome,
  type Place,
  type Target,
} from '../../specs/isolation/matrix.js';
import { missingCells, requiredCells } from '../../specs/isolation/report.js';
import { udpDnsProbe } from '../../specs/isolation/standins.js';

/** A place that runs the script with this machine's bash (PATH as given), without blocking the servers. */
const localPlace = (name: string, env: NodeJS.ProcessEnv = process.env): Place => ({
  name,
  run: async (script) => (await promisify(execFile)('/bin/bash', ['-c', script], { env })).stdout,
});

const OPEN: Outcome = { kind: 'open' };

describe('classify: how a probe ended', () => {
  it.each([
    [0, '', { kind: 'open' }],
    [124, '', { kind: 'timeout' }],
    [
      1,
      'bash: connect: Connection refused bash: line 1: /dev/tcp/10.0.0.1/80: Connection refused',
      { kind: 'refused' },
    ],
    [1, 'bash: connect: Connection reset by peer', { kind: 'reset' }],
    [
      1,
      'bash: connect: No route to host',
      { kind: 'error', detail: 'exit 1: bash: connect: No route to host' },
    ],
    [
      1,
      'bash: connect: Network is unreachable',
      { kind: 'error', detail: 'exit 1: bash: connect: Network is unreachable' },
    ],
    [
      127,
      'bash: timeout: command not found',
      { kind: 'error', detail: 'exit 127: bash: timeout: command not found' },
    ],
    [2, '', { kind: 'error', detail: 'exit 2: (no message)' }],
  ])('exit %d "%s"', (code, message, outcome) => {
    expect(classify(code, message)).toEqual(outcome);
  });
});

describe('verdict: closed only for a policy failure with a connecting control', () => {
  it('an attack that connected is OPEN, whatever the control did', () => {
    expect(verdict(OPEN, { kind: 'timeout' }, 'node').verdict).toBe('OPEN');
  });

  it.each(['timeout', 'refused', 'reset'] as const)('%s with a connecting control is closed', (kind) => {
    expect(verdict({ kind }, OPEN, 'node')).toEqual({
      verdict: 'closed',
      why: `${kind}; control from node connected`,
    });
  });

  it.each(['timeout', 'refused', 'reset'] as const)('%s with a failed control is inconclusive', (kind) => {
    const v = verdict({ kind }, { kind: 'refused' }, 'gateway position');
    expect(v.verdict).toBe('inconclusive');
    expect(v.why).toMatch(/control from gateway position did not connect \(refused\)/);
  });

  it('an attack that failed otherwise (no route, command missing) is inconclusive', () => {
    const v = verdict({ kind: 'error', detail: 'exit 127: timeout: command not found' }, OPEN, 'node');
    expect(v).toEqual({
      verdict: 'inconclusive',
      why: 'the attack failed without reaching a policy: exit 127: timeout: command not found',
    });
  });
});

describe('parseProbes', () => {
  it('reads one line per target and fails on a missing one', () => {
    const out = 'a\t0\t\nb\t124\t\nc\t1\tbash: connect: Connection refused\nnoise\n';
    const m = parseProbes(['a', 'b', 'c'], out);
    expect([...m]).toEqual([
      ['a', OPEN],
      ['b', { kind: 'timeout' }],
      ['c', { kind: 'refused' }],
    ]);
    expect(() => parseProbes(['a', 'd'], out)).toThrow(/no result for d/);
  });

  it('refuses a target name or host that could break the script', () => {
    expect(() => probeScript([{ name: 'x; rm -rf /', host: '10.0.0.1', port: 80 }])).toThrow(/bad target/);
    expect(() => probeScript([{ name: 'x', host: '$(id)', port: 80 }])).toThrow(/bad target/);
  });
});

describe('the probes, run by bash on this machine', () => {
  let server: Server;
  let open: number;
  let closed: number;
  let udp: Socket;
  let udpPort: number;

  beforeAll(async () => {
    server = createServer((s) => s.end());
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    open = (server.address() as AddressInfo).port;
    // A port that was just free: nothing listens there.
    const probe = createServer();
    await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
    closed = (probe.address() as AddressInfo).port;
    await new Promise<void>((ok) => probe.close(() => ok()));
    udp = createSocket('udp4');
    udp.on('message', (msg, r) => udp.send(msg, r.port, r.address));
    await new Promise<void>((ok) => udp.bind(0, '127.0.0.1', ok));
    udpPort = udp.address().port;
  });

  afterAll(async () => {
    udp.close();
    await new Promise<void>((ok) => server.close(() => ok()));
  });

  it('tells an open port from a refused one, in one parallel script', async () => {
    const out = await localPlace('here').run(
      probeScript([
        { name: 'listening', host: '127.0.0.1', port: open },
        { name: 'nothing-there', host: '127.0.0.1', port: closed },
      ]),
    );
    const m = parseProbes(['listening', 'nothing-there'], out);
    expect(m.get('listening')).toEqual(OPEN);
    expect(m.get('nothing-there')).toEqual({ kind: 'refused' });
  });

  it('without the timeout command, a probe is an error (so its cell is inconclusive, never closed)', async () => {
    const out = await localPlace('no tools', { PATH: '/nonexistent' }).run(
      probeScript([{ name: 'x', host: '127.0.0.1', port: open }]),
    );
    const o = parseProbes(['x'], out).get('x')!;
    expect(o.kind).toBe('error');
    expect(o.kind === 'error' && o.detail).toMatch(/^exit 127: .*timeout/);
  });

  it('runMatrix: refused from the attacker and open from the control is closed; a dead target is inconclusive', async () => {
    // The "attacker" reaches nothing (every port refused): here, a second loopback address.
    const control = localPlace('control');
    const targets: Target[] = [
      { name: 'guarded', host: '127.0.0.1', port: open, control },
      { name: 'dead', host: '127.0.0.1', port: closed, control },
    ];
    const attacker: Place = {
      name: 'attacker',
      run: (script) => control.run(script.replaceAll(`127.0.0.1 ${open}`, `127.0.0.1 ${closed}`)),
    };
    const results = await runMatrix(attacker, targets);
    expect(results.map((r) => [r.name, r.verdict])).toEqual([
      ['guarded', 'closed'],
      ['dead', 'inconclusive'],
    ]);
    expect(failures(results)).toEqual({
      open: [],
      inconclusive: [
        expect.stringMatching(/^dead 127\.0\.0\.1:\d+: control from control did not connect \(refused\)/),
      ],
    });
    expect((await runMatrix(control, targets)).map((r) => r.verdict)).toEqual(['OPEN', 'inconclusive']);
  });

  it('the UDP DNS probe: answered by a server, refused where none listens', async () => {
    const here = localPlace('here');
    const run = (script: string): Promise<string> => here.run(script);
    const answered = parseProbes(['u'], await run(udpDnsProbe('u', '127.0.0.1', udpPort))).get('u');
    const refused = parseProbes(['u'], await run(udpDnsProbe('u', '127.0.0.1', closed))).get('u');
    expect([answered, refused]).toEqual([OPEN, { kind: 'refused' }]);
  });
});

describe('cellResults and the required cells', () => {
  it('pairs each target with its attack and control outcomes', () => {
    const control = localPlace('node');
    const results = cellResults(
      [{ name: 'kubelet', host: '10.0.0.1', port: 10250, control }],
      new Map<string, Outcome>([['kubelet', { kind: 'timeout' }]]),
      new Map([['kubelet', OPEN]]),
    );
    expect(results).toEqual([
      {
        name: 'kubelet',
        host: '10.0.0.1',
        port: 10250,
        attack: { kind: 'timeout' },
        controlPlace: 'node',
        control: OPEN,
        verdict: 'closed',
        why: 'timeout; control from node connected',
      },
    ]);
  });

  it('names the required cells a matrix lacks (stand-ins, gVisor and runc only where asked)', () => {
    const names = requiredCells({ local: false, gvisor: false, runc: false })
      .filter((r): r is string => typeof r === 'string')
      .concat(['gateway-pod-0-metrics', 'operator-pod-1-metrics']);
    expect(missingCells(names, requiredCells({ local: false, gvisor: false, runc: false }))).toEqual([]);
    expect(missingCells(names, requiredCells({ local: true, gvisor: true, runc: true }))).toEqual([
      'agent-gvisor-other-tenant',
      'agent-runc-same-tenant',
      'port-1024-gvisor-other-tenant',
      'port-8000-gvisor-other-tenant',
      'port-65535-gvisor-other-tenant',
      'port-1024-runc-same-tenant',
      'port-8000-runc-same-tenant',
      'port-65535-runc-same-tenant',
      'metadata-standin',
      'external-dns-standin',
    ]);
    expect(missingCells(['kubelet'], [/^gateway-pod-\d+-metrics$/])).toEqual([
      '/^gateway-pod-\\d+-metrics$/',
    ]);
  });
});
