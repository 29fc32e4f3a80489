/**
 * The default RuntimeClass applies only where it exists (kube/runtime-class.ts): looked up at start
 * and periodically; not found -> Pods get no runtimeClassName, a warning once per change, the
 * gauge at 0; a failed lookup keeps the last verdict (never downgrades the runtime).
 */
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { createRuntimeClassLookup, DefaultRuntimeClass } from '../../../src/kube/runtime-class.js';
import type { RuntimeClassLookup } from '../../../src/kube/ports.js';
import { buildPod } from '../../../src/resources/pod.js';
import { SessionRegistry } from '../../../src/controller/session-registry.js';
import { OperatorMetrics } from '../../../src/telemetry/metrics.js';
import { controllerDeps, FakeClock, MemoryLogger } from '../../fakes/fakes.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { session, withSpec } from '../../fixtures/sessions.js';

const base = controllerDeps(new FakeCluster(), new FakeClock(0)).podOptions;

/** A lookup answering from a script: true, false, or an Error to throw. */
class ScriptedLookup implements RuntimeClassLookup {
  readonly asked: string[] = [];
  constructor(public answer: boolean | Error) {}
  exists(name: string): Promise<boolean> {
    this.asked.push(name);
    return this.answer instanceof Error ? Promise.reject(this.answer) : Promise.resolve(this.answer);
  }
}

function setup(answer: boolean | Error, configured: { name?: string } = { name: 'gvisor' }) {
  const name = configured.name;
  const lookup = new ScriptedLookup(answer);
  const logger = new MemoryLogger();
  const gauge: number[] = [];
  const rc = new DefaultRuntimeClass({
    name,
    lookup,
    logger,
    onChange: (available) => gauge.push(available ? 1 : 0),
  });
  return { lookup, logger, gauge, rc, opts: rc.podOptions(base) };
}

const runtimeOf = (opts: ReturnType<typeof setup>['opts'], ...mods: Parameters<typeof session>) => {
  const s = session(...mods);
  return buildPod(s, { namespace: 'team-a', name: 'demo', uid: 'uid-1' }, opts).spec?.runtimeClassName;
};

let stop: (() => void) | undefined;
afterEach(() => {
  stop?.();
  stop = undefined;
});

describe('DefaultRuntimeClass', () => {
  it('applies the default when the RuntimeClass exists; an explicit spec runtime is used as given', async () => {
    const { rc, opts, gauge, lookup, logger } = setup(true);
    stop = () => rc.stop();
    await rc.start();
    expect(lookup.asked).toEqual(['gvisor']);
    expect(runtimeOf(opts)).toBe('gvisor');
    expect(runtimeOf(opts, withSpec({ runtimeClassName: 'runc-allowed' }))).toBe('runc-allowed');
    expect(gauge).toEqual([1]);
    expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('gives Pods no runtimeClassName while it does not exist: one warning per change, the gauge at 0', async () => {
    const { rc, opts, gauge, lookup, logger } = setup(false);
    await rc.refresh();
    expect(runtimeOf(opts)).toBeUndefined();
    expect(runtimeOf(opts, withSpec({ runtimeClassName: 'gvisor' }))).toBe('gvisor');
    await rc.refresh();
    await rc.refresh();
    const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
    expect(warnings).toEqual([
      "the default RuntimeClass does not exist; sandbox Pods without one of their own get the node's default runtime",
    ]);
    expect(gauge).toEqual([1, 0]);
    // It appears: the default applies again, said once.
    lookup.answer = true;
    await rc.refresh();
    await rc.refresh();
    expect(runtimeOf(opts)).toBe('gvisor');
    expect(gauge).toEqual([1, 0, 1]);
    expect(logger.lines.filter((l) => l.message.startsWith('the default RuntimeClass exists'))).toHaveLength(
      1,
    );
    // And goes again.
    lookup.answer = false;
    await rc.refresh();
    expect(runtimeOf(opts)).toBeUndefined();
    expect(gauge).toEqual([1, 0, 1, 0]);
    expect(logger.lines.filter((l) => l.level === 'warn')).toHaveLength(2);
  });

  it('a failing lookup keeps the last verdict (the default before any), warned once per streak with the cause', async () => {
    const { rc, opts, gauge, lookup, logger } = setup(new Error('forbidden: get runtimeclasses'));
    await rc.refresh();
    await rc.refresh();
    expect(runtimeOf(opts)).toBe('gvisor');
    const warns = logger.lines.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect(warns[0]?.message).toMatch(/cannot tell/);
    expect(JSON.stringify(warns[0]?.fields)).toContain('forbidden: get runtimeclasses');
    lookup.answer = false;
    await rc.refresh();
    expect(runtimeOf(opts)).toBeUndefined();
    lookup.answer = new Error('timeout');
    await rc.refresh();
    expect(runtimeOf(opts)).toBeUndefined();
    expect(gauge).toEqual([1, 0]);
  });

  it('with no default configured looks nothing up and leaves the runtime to the node', async () => {
    const { rc, opts, gauge, lookup } = setup(true, {});
    await rc.start();
    expect(lookup.asked).toEqual([]);
    expect(runtimeOf(opts)).toBeUndefined();
    expect(gauge).toEqual([0]);
  });

  it('looks up again every interval', async () => {
    jest.useFakeTimers();
    try {
      const lookup = new ScriptedLookup(true);
      const rc = new DefaultRuntimeClass({
        name: 'gvisor',
        lookup,
        logger: new MemoryLogger(),
        intervalMs: 60_000,
      });
      await rc.start();
      await jest.advanceTimersByTimeAsync(180_000);
      expect(lookup.asked).toHaveLength(4);
      rc.stop();
      await jest.advanceTimersByTimeAsync(120_000);
      expect(lookup.asked).toHaveLength(4);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('createRuntimeClassLookup', () => {
  const api = (read: () => Promise<unknown>) => ({ readRuntimeClass: read }) as unknown as k8s.NodeV1Api;

  it('true when found, false on 404, rejects on anything else', async () => {
    expect(await createRuntimeClassLookup(api(() => Promise.resolve({}))).exists('gvisor')).toBe(true);
    const notFound = new k8s.ApiException(404, 'not found', '{}', {});
    expect(await createRuntimeClassLookup(api(() => Promise.reject(notFound))).exists('gvisor')).toBe(false);
    const forbidden = new k8s.ApiException(403, 'forbidden', '{}', {});
    await expect(
      createRuntimeClassLookup(api(() => Promise.reject(forbidden))).exists('gvisor'),
    ).rejects.toThrow('read RuntimeClass gvisor');
  });
});

describe('the gauge', () => {
  it('is sandbox_operator_default_runtime_class_available on the operator registry', async () => {
    const metrics = new OperatorMetrics(new SessionRegistry());
    const rc = new DefaultRuntimeClass({
      name: 'gvisor',
      lookup: new ScriptedLookup(false),
      logger: new MemoryLogger(),
      onChange: (a) => metrics.defaultRuntimeClassAvailable.set(a ? 1 : 0),
    });
    expect(await metrics.registry.metrics()).toMatch(/^sandbox_operator_default_runtime_class_available 1$/m);
    await rc.refresh();
    expect(await metrics.registry.metrics()).toMatch(/^sandbox_operator_default_runtime_class_available 0$/m);
  });
});
