/**
 * The bind client's early connection (docs/adr/0016, "Claim latency"): a bind over a connection
 * opened while the claim patch was under way uses that connection, and a bind whose early
 * connection failed or went to another Pod IP dials afresh, so the early connection never makes a
 * bind fail that would have succeeded.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import { afterEach, describe, expect, it } from '@jest/globals';
import type { BindRequest } from '@sandbox-platform/api';

import { createBindClient } from '../../../src/pool/bind-client.js';

const BODY: BindRequest = { payload: '{}', signature: `${'A'.repeat(86)}==` };

interface Agent {
  readonly port: number;
  /** Connections accepted, in order. */
  readonly sockets: Socket[];
  /** Remote ports of the connections the binds came over. */
  readonly bindPorts: number[];
}

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(resolve));
    }),
  );
});

/** A fake agent answering every bind with 200; `refuseFirst` resets the first connection. */
async function fakeAgent(refuseFirst = false): Promise<Agent> {
  const sockets: Socket[] = [];
  const bindPorts: number[] = [];
  const server = createServer((req, res) => {
    bindPorts.push(req.socket.remotePort ?? 0);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"bound":true,"session":{"namespace":"a","name":"b","uid":"c"}}');
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.push(socket);
    if (refuseFirst && sockets.length === 1) socket.resetAndDestroy();
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, sockets, bindPorts };
}

/** Waits until `n` connections were accepted (the early one is opened in the background). */
async function accepted(agent: Agent, n: number): Promise<void> {
  while (agent.sockets.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the bind client', () => {
  it('binds over the early connection when it is usable', async () => {
    const agent = await fakeAgent();
    const client = createBindClient({ port: agent.port, timeoutMs: 5000 });
    const early = client.connectEarly?.('127.0.0.1');
    expect(early).toBeDefined();
    await accepted(agent, 1);
    expect(await client.bind('127.0.0.1', BODY, early)).toBe('bound');
    early?.close();
    expect(agent.sockets).toHaveLength(1);
    expect(agent.bindPorts).toEqual([agent.sockets[0]?.remotePort]);
  });

  it('dials afresh when the early connection was reset before the bind', async () => {
    const agent = await fakeAgent(true);
    const client = createBindClient({ port: agent.port, timeoutMs: 5000 });
    const early = client.connectEarly?.('127.0.0.1');
    await accepted(agent, 1);
    // Let the reset reach the client before the bind.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await client.bind('127.0.0.1', BODY, early)).toBe('bound');
    early?.close();
    expect(agent.sockets).toHaveLength(2);
    expect(agent.bindPorts).toEqual([agent.sockets[1]?.remotePort]);
  });

  it('does not use an early connection to another Pod IP, and closes an unused one', async () => {
    const agent = await fakeAgent();
    const client = createBindClient({ port: agent.port, timeoutMs: 5000 });
    const early = client.connectEarly?.('127.0.0.1');
    await accepted(agent, 1);
    expect(await client.bind('localhost', BODY, early)).toBe('bound');
    expect(agent.bindPorts).toEqual([agent.sockets[1]?.remotePort]);
    const first = agent.sockets[0];
    const closed = first && once(first, 'close');
    early?.close();
    await closed;
    expect(first?.destroyed).toBe(true);
  });
});
