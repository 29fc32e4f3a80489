/**
 * The common part of the operator-kill chaos specs (pool/ and suspend/): they run on the local
 * cluster only, start from operator pods the kubelet restarts at once, and SIGKILL the operator
 * from a watch callback at the moment a cue is seen, exactly once, reporting a failed kill to the
 * test rather than throwing inside the watch.
 */
import type { KubeClients } from '../../src/framework/index.js';
import { armOperatorKill, freshOperator, type OperatorKill } from '../../src/framework/platform-operator.js';

/** The local cluster only: the specs kill processes of this machine. */
export const onLocalCluster = !process.env.E2E_KUBECONFIG;

/** Milliseconds as seconds with one decimal, for the printed timings. */
export const seconds = (ms: number): string => (ms / 1000).toFixed(1);

/**
 * Replaces operator pods whose container died in the last 10 minutes (an earlier kill), so the
 * kubelet's crash back-off does not hold their restart (platform-operator.ts, freshOperator); says
 * which were replaced.
 */
export async function startFromFreshOperator(kube: KubeClients): Promise<void> {
  const replaced = await freshOperator(kube);
  if (replaced.length > 0)
    console.log(`operator pods replaced (a container died in the last 10 min): ${replaced.join(', ')}`);
}

/** An operator kill made ready, fired once at a cue. */
export interface KillTrigger {
  /** SIGKILLs the operator (synchronous: safe in a watch callback); later calls do nothing. */
  fire(cue: string): void;
  /** Resolves at the first fire(), whether the kill worked or failed. */
  readonly fired: Promise<void>;
  /** The kill and its cue; throws what the kill threw, or when it was never fired. */
  outcome(): { kill: OperatorKill; cue: string };
}

/** Finds the leader's (`'leader'`) or every replica's (`'all'`) process, to be killed by fire(). */
export async function armKillOnce(kube: KubeClients, which: 'leader' | 'all'): Promise<KillTrigger> {
  const armed = await armOperatorKill(kube, which);
  let result: { kill: OperatorKill; cue: string } | { error: unknown } | undefined;
  let done!: () => void;
  const fired = new Promise<void>((resolve) => (done = resolve));
  return {
    fired,
    fire(cue) {
      if (result) return;
      try {
        result = { kill: armed.fire(), cue };
      } catch (error) {
        result = { error };
      }
      done();
    },
    outcome() {
      if (!result) throw new Error('the operator kill was never fired');
      if ('error' in result) throw result.error;
      return result;
    },
  };
}
