import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';

import type { LightMyRequestResponse } from 'fastify';
import winston from 'winston';

import { ProblemError } from '../../../src/errors.js';
import { WinstonFastifyLogger } from '../../../src/logger.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { result } from '../../helpers/fake-transport.js';
import { expectProblem } from '../../helpers/problem.js';
import { collected, deleting, kubeExec, pending, ready, session } from '../../helpers/sessions.js';

describe('exec routes', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
  });
  afterEach(async () => {
    await t.app.close();
  });

  const exec = (name: string, payload: unknown, key = KEYS.a, query = ''): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method: 'POST',
      url: `/v1/sessions/${name}/exec${query}`,
      headers: auth(key),
      payload: payload as object,
    });

  describe('POST /v1/sessions/{name}/exec', () => {
    it('forwards to the Agent transport with the address from the session status only', async () => {
      t.store.put(session('demo', 'team-a', ready('10.9.8.7')));
      t.agent.nextResult = result({ stdout: 'hi\n', exitCode: 0 });
      const res = await exec('demo', { command: 'echo hi', cwd: 'src', env: { A: 'b' } });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(result({ stdout: 'hi\n', exitCode: 0 }));
      expect(t.agent.calls).toHaveLength(1);
      expect(t.agent.calls[0]!.target).toMatchObject({
        podIP: '10.9.8.7',
        uid: 'uid-demo',
        namespace: 'team-a',
        name: 'demo',
      });
      expect(t.agent.calls[0]!.req).toEqual({
        command: 'echo hi',
        timeoutSeconds: 60,
        cwd: 'src',
        env: { A: 'b' },
      });
      expect(t.kube.calls).toHaveLength(0);
    });

    it.each(['169.254.169.254', '127.0.0.1'])(
      'never dials a status pod IP of %s: the session stays not ready',
      async (ip) => {
        t.store.put(session('odd', 'team-a', ready(ip)));
        const res = await exec('odd', { command: 'true', waitSeconds: 0 });
        expectProblem(res, 503, 'session-not-ready');
        expect(t.agent.calls).toHaveLength(0);
      },
    );

    it('uses the KubernetesExec transport for sessions that ask for it', async () => {
      t.store.put(session('k', 'team-a', ready(), kubeExec));
      await exec('k', { command: 'true', timeoutSeconds: 5 });
      expect(t.kube.calls.map((c) => c.req)).toEqual([{ command: 'true', timeoutSeconds: 5 }]);
      expect(t.agent.calls).toHaveLength(0);
    });

    it('returns a non-zero exit as a normal 200 result', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      t.agent.nextResult = result({ stderr: 'boom\n', exitCode: 3 });
      const res = await exec('demo', { command: 'exit 3' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ exitCode: 3, stderr: 'boom\n' });
    });

    it('reports activity: begin before, end after the call', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      await exec('demo', { command: 'true' });
      expect({ begun: t.activity.begun, ended: t.activity.ended }).toEqual({ begun: 1, ended: 1 });
      expect(t.activity.touched).toEqual(['team-a/demo', 'team-a/demo']);
    });

    it('ignores any pod address the client sends: it is an unknown field', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      const res = await exec('demo', { command: 'true', podIP: '169.254.169.254' });
      expect(expectProblem(res, 400, 'invalid-request').detail).toMatch(/unknown field "podIP"/);
      expect(t.agent.calls).toHaveLength(0);
    });

    it.each([
      ['a missing command', {}, /command/],
      ['an empty command', { command: '' }, /command/],
      ['a wrong JSON type', { command: 'true', timeoutSeconds: '5' }, /timeoutSeconds must be integer/],
      ['a timeout above the max', { command: 'true', timeoutSeconds: 121 }, /timeoutSeconds must be <= 120/],
      ['a zero timeout', { command: 'true', timeoutSeconds: 0 }, /timeoutSeconds/],
      ['waitSeconds above the max', { command: 'true', waitSeconds: 6 }, /waitSeconds/],
      ['an unknown field', { command: 'true', timeout: 5 }, /unknown field "timeout"/],
      ['a non-string env value', { command: 'true', env: { A: 1 } }, /env/],
      ['a bad env name', { command: 'true', env: { 'A-B': 'x' } }, /env/],
    ])('refuses %s with 400', async (_what, payload, detail) => {
      t.store.put(session('demo', 'team-a', ready()));
      const res = await exec('demo', payload);
      expect(expectProblem(res, 400, 'invalid-request').detail).toMatch(detail);
      expect(t.agent.calls).toHaveLength(0);
    });

    it('refuses a non-JSON body with 400', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      const asText = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec',
        headers: { ...auth(KEYS.a), 'content-type': 'text/plain' },
        payload: 'echo hi',
      });
      const broken = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec',
        headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
        payload: '{"command": "echo',
      });
      expectProblem(asText, 400, 'invalid-request');
      expectProblem(broken, 400, 'invalid-request');
    });

    it('refuses an unsupported content type with 415', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec',
        headers: { ...auth(KEYS.a), 'content-type': 'application/xml' },
        payload: '<command/>',
      });
      expectProblem(res, 415, 'unsupported-media-type');
    });

    it('refuses an oversize body with 413', async () => {
      const res = await exec('demo', { command: 'x'.repeat(70_000) });
      expectProblem(res, 413, 'payload-too-large');
    });

    it('answers 400 for an invalid session name', async () => {
      expectProblem(await exec('Bad_Name', { command: 'true' }), 400, 'invalid-request');
    });

    it('answers 404 for an unknown session', async () => {
      expectProblem(await exec('nope', { command: 'true' }), 404, 'session-not-found');
      expect(t.store.calls).toEqual(['read team-a/nope']);
    });

    it('waits for a session the API server has but the watch has not delivered after the grace', async () => {
      t.store.watchLags = true;
      await t.store.createOrGet(session('late', 'team-a', ready('10.4.4.4')));
      t.agent.nextResult = result({ stdout: 'late\n', exitCode: 0 });
      // inject starts on its first then().
      const pending = exec('late', { command: 'echo late', waitSeconds: 5 }).then((r) => r);
      // After the 1 s grace the gateway asks the API server, finds it, and keeps waiting.
      for (let i = 0; i < 100 && !t.store.calls.includes('read team-a/late'); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(t.store.calls).toContain('read team-a/late');
      t.store.deliver('team-a', 'late');
      const res = await pending;
      expect(res.statusCode).toBe(200);
      expect(t.agent.calls).toHaveLength(1);
    });

    it('answers 503, not 404, for a session the API server has when waitSeconds ends before the watch delivers it', async () => {
      t.store.watchLags = true;
      await t.store.createOrGet(session('lagging', 'team-a', ready()));
      const res = await exec('lagging', { command: 'true', waitSeconds: 0 });
      expect(expectProblem(res, 503, 'session-not-ready').reason).toBe('Pending');
    });

    it("answers 403 for another tenant's session and never forwards", async () => {
      t.store.put(session('theirs', 'team-b', ready()));
      expectProblem(await exec('theirs', { command: 'id' }, KEYS.a, '?namespace=team-b'), 403, 'forbidden');
      expect(t.agent.calls).toHaveLength(0);
    });

    it('answers 404, not 403, for a name that exists only in another tenant namespace', async () => {
      t.store.put(session('theirs', 'team-b', ready()));
      expectProblem(await exec('theirs', { command: 'id' }, KEYS.a), 404, 'session-not-found');
    });

    it('answers 503 with Retry-After and the reason when the session stays not ready', async () => {
      t.store.put(session('slow', 'team-a', pending('PodPending')));
      const res = await exec('slow', { command: 'true', waitSeconds: 0 });
      const body = expectProblem(res, 503, 'session-not-ready');
      expect(res.headers['retry-after']).toBe('2');
      expect(body.reason).toBe('PodPending');
    });

    it('waits for the session to become ready and then runs the command', async () => {
      t.store.put(session('slow', 'team-a', pending()));
      const pendingExec = exec('slow', { command: 'true', waitSeconds: 5 });
      setTimeout(() => t.store.put(session('slow', 'team-a', ready('10.0.0.9'))), 150);
      const res = await pendingExec;
      expect(res.statusCode).toBe(200);
      expect(t.agent.calls[0]!.target.podIP).toBe('10.0.0.9');
    });

    it('answers 410 with the reason for a collected (Retain) session', async () => {
      t.store.put(session('old', 'team-a', collected('IdleTimeout')));
      const res = await exec('old', { command: 'true' });
      expect(expectProblem(res, 410, 'session-gone').reason).toBe('IdleTimeout');
    });

    it('answers 410 for a session being deleted, and for one seen deleted', async () => {
      t.store.put(session('bye', 'team-a', ready(), deleting));
      t.store.put(session('gone', 'team-a', ready()));
      t.store.remove('team-a', 'gone');
      expect(expectProblem(await exec('bye', { command: 'true' }), 410, 'session-gone').reason).toBe(
        'Terminating',
      );
      expect(expectProblem(await exec('gone', { command: 'true' }), 410, 'session-gone').reason).toBe(
        'Deleted',
      );
    });

    it('answers 410 when a waiting exec sees the session deleted', async () => {
      t.store.put(session('doomed', 'team-a', pending()));
      const waiting = exec('doomed', { command: 'true', waitSeconds: 5 });
      setTimeout(() => t.store.remove('team-a', 'doomed', 'LifetimeExceeded'), 100);
      expect(expectProblem(await waiting, 410, 'session-gone').reason).toBe('LifetimeExceeded');
    });

    it.each([
      [
        new ProblemError('upstream-error', 'the sandbox agent could not be reached', {
          retryAfterSeconds: 1,
        }),
        502,
        'upstream-error',
      ],
      [
        new ProblemError('upstream-timeout', 'the sandbox did not answer within the deadline'),
        504,
        'upstream-timeout',
      ],
      [
        new ProblemError('shell-unavailable', 'bash is restarting', { retryAfterSeconds: 1 }),
        503,
        'shell-unavailable',
      ],
    ])('maps a transport failure to its problem (%#)', async (err, status, slug) => {
      t.store.put(session('demo', 'team-a', ready()));
      t.agent.nextResult = err;
      const res = await exec('demo', { command: 'true' });
      expectProblem(res, status, slug);
      expect(t.activity.ended).toBe(1);
    });

    it('answers 401 without a key and never forwards', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec',
        payload: { command: 'true' },
      });
      expectProblem(res, 401, 'unauthorized');
      expect(t.agent.calls).toHaveLength(0);
    });
  });

  describe('audit log', () => {
    it('writes one line per exec after the response: key id, session, command digest, exit code; never the command', async () => {
      const lines: Array<Record<string, unknown>> = [];
      const stream = new Writable({
        write(chunk: Buffer, _enc, cb): void {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          cb();
        },
      });
      const w = winston.createLogger({
        level: 'info',
        format: winston.format.json(),
        transports: [new winston.transports.Stream({ stream })],
      });
      const logged = await buildTestApp({}, { logger: new WinstonFastifyLogger(w) });
      try {
        logged.store.put(session('demo', 'team-a', ready('10.9.8.7')));
        logged.agent.nextResult = result({ exitCode: 3, durationMs: 7 });
        const command = 'echo secret-value';
        const res = await logged.app.inject({
          method: 'POST',
          url: '/v1/sessions/demo/exec',
          headers: auth(KEYS.a),
          payload: { command },
        });
        expect(res.statusCode).toBe(200);
        await new Promise((r) => setImmediate(r));
        const execLines = lines.filter((l) => l.message === 'exec');
        expect(execLines).toEqual([
          expect.objectContaining({
            level: 'info',
            keyId: 'a',
            namespace: 'team-a',
            session: 'demo',
            command: createHash('sha256').update(command).digest('hex').slice(0, 16),
            exitCode: 3,
            ms: 7,
          }),
        ]);
        expect(JSON.stringify(lines)).not.toContain('secret-value');
      } finally {
        await logged.app.close();
      }
    });
  });

  describe('POST /v1/sessions/{name}/exec/stream', () => {
    it('passes the NDJSON stream through', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec/stream',
        headers: auth(KEYS.a),
        payload: { command: 'echo hi' },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
      const lines = res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toEqual([
        { type: 'stdout', data: 'hi\n', encoding: 'utf-8' },
        { type: 'exit', exitCode: 0, durationMs: 1, truncated: false, timedOut: false, shellReset: false },
      ]);
      expect(t.agent.calls[0]!.op).toBe('stream');
      await new Promise((r) => setImmediate(r)); // 'close' follows 'end' by a tick
      expect({ begun: t.activity.begun, ended: t.activity.ended }).toEqual({ begun: 1, ended: 1 });
    });

    it('answers problems before streaming starts (unknown session, bad body)', async () => {
      const unknown = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/nope/exec/stream',
        headers: auth(KEYS.a),
        payload: { command: 'x' },
      });
      const bad = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/nope/exec/stream',
        headers: auth(KEYS.a),
        payload: { cmd: 'x' },
      });
      expectProblem(unknown, 404, 'session-not-found');
      expectProblem(bad, 400, 'invalid-request');
    });

    it('maps an upstream failure to a problem and ends the activity heartbeat', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      t.agent.error = new ProblemError('upstream-error', 'the sandbox agent could not be reached');
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec/stream',
        headers: auth(KEYS.a),
        payload: { command: 'x' },
      });
      expectProblem(res, 502, 'upstream-error');
      expect(t.activity.ended).toBe(1);
    });
  });
});
