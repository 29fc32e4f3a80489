import { describe, expect, it } from '@jest/globals';

import { sessionState, toSessionView } from '../../../src/sessions/model.js';
import { collected, deleting, kubeExec, pending, ready, session } from '../../helpers/sessions.js';

describe('sessionState', () => {
  it('is ready with a target built from metadata, spec and status', () => {
    expect(sessionState(session('s', 'ns', ready('10.1.1.1'), kubeExec))).toEqual({
      kind: 'ready',
      target: {
        namespace: 'ns',
        name: 's',
        uid: 'uid-s',
        podName: 'sbs-s',
        podIP: '10.1.1.1',
        transport: 'KubernetesExec',
        idleTimeoutSeconds: 1800,
      },
    });
  });

  it('accepts IPv6 pod IPs', () => {
    expect(sessionState(session('s', 'ns', ready('fd00::7'))).kind).toBe('ready');
  });

  it.each(['evil.example.com', '10.0.0.1:22', '', 'http://10.0.0.1'])(
    'never treats a non-IP address (%j) as ready',
    (ip) => {
      expect(sessionState(session('s', 'ns', ready(ip))).kind).toBe('pending');
    },
  );

  it('is pending with the operator reason, or Creating before any status', () => {
    expect(sessionState(session('s', 'ns', pending('ImagePullFailed')))).toMatchObject({
      kind: 'pending',
      reason: 'ImagePullFailed',
    });
    expect(sessionState(session('s'))).toMatchObject({ kind: 'pending', reason: 'Creating' });
  });

  it('is pending Suspended while suspending or suspended, with the operator message of either', () => {
    const suspend = (reason: string) => (x: Parameters<ReturnType<typeof pending>>[0]) => {
      pending(reason)(x);
      x.spec.suspend = true;
    };
    expect(sessionState(session('s', 'ns', suspend('Suspending')))).toEqual({
      kind: 'pending',
      reason: 'Suspended',
      message: 'pod is starting',
    });
    expect(sessionState(session('s', 'ns', suspend('Suspended')))).toMatchObject({
      message: 'pod is starting',
    });
    // spec.suspend set, the operator not there yet: still Ready in status, never dialed.
    expect(sessionState(session('s', 'ns', ready(), (x) => (x.spec.suspend = true)))).toEqual({
      kind: 'pending',
      reason: 'Suspended',
      message: 'the session is being suspended; the next call resumes it',
    });
  });

  it('is gone when deleting (even if Ready) or collected with Retain', () => {
    expect(sessionState(session('s', 'ns', ready(), deleting))).toMatchObject({
      kind: 'gone',
      reason: 'Terminating',
    });
    expect(sessionState(session('s', 'ns', collected('IdleTimeout')))).toMatchObject({
      kind: 'gone',
      reason: 'IdleTimeout',
    });
    expect(sessionState(session('s', 'ns', collected('LifetimeExceeded')))).toMatchObject({
      kind: 'gone',
      reason: 'LifetimeExceeded',
    });
  });
});

describe('toSessionView', () => {
  it('exposes readiness and lifecycle fields but no pod address', () => {
    const s = session('s', 'ns', ready('10.2.2.2'), (x) => {
      x.status!.expiresAt = '2030-01-01T01:00:00Z';
      x.metadata.creationTimestamp = new Date('2030-01-01T00:00:00Z');
    });
    const view = toSessionView(s);
    expect(view).toMatchObject({
      name: 's',
      ready: true,
      reason: 'SandboxReady',
      createdAt: '2030-01-01T00:00:00.000Z',
      expiresAt: '2030-01-01T01:00:00Z',
    });
    expect(JSON.stringify(view)).not.toContain('10.2.2.2');
  });
});
