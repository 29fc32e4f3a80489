/**
 * The setup every operator integration suite shares: API clients, a test namespace and its
 * Sessions, and the operators started in it; teardown() stops the operators and deletes the
 * namespaces. A suite calls setup() in beforeAll and teardown() in afterAll.
 */
import {
  createTestNamespace,
  kubeClients,
  type KubeClients,
  type TestNamespace,
  testNamespaceName,
} from '@sandbox-platform/test-support';
import { startOperator, type OperatorProcess, type StartOptions } from './operator-process.js';
import { Sessions } from './sessions.js';

/** Options of {@link OperatorFixture.startOperator}: those of startOperator, namespace defaulting to the fixture's. */
export type FixtureStartOptions = Omit<StartOptions, 'namespace'> & { readonly namespace?: string };

/** Clients, namespace, sessions and operators of one test file. */
export class OperatorFixture {
  readonly kube: KubeClients = kubeClients();
  /** The suite's namespace: named now (so tests may capture it), created by setup(). */
  readonly ns: { readonly name: string };
  /** Sessions in {@link ns}. */
  readonly sessions: Sessions;
  private readonly namespaces: TestNamespace[] = [];
  private readonly operators: OperatorProcess[] = [];

  constructor(prefix: string) {
    this.ns = { name: testNamespaceName(prefix) };
    this.sessions = new Sessions(this.kube.custom, this.ns.name);
  }

  /** Creates the suite's namespace. */
  async setup(): Promise<void> {
    this.namespaces.push(await createTestNamespace(this.kube.core, { name: this.ns.name }));
  }

  /** Creates another namespace, deleted by teardown() too. */
  async namespace(prefix: string): Promise<TestNamespace> {
    const ns = await createTestNamespace(this.kube.core, { prefix });
    this.namespaces.push(ns);
    return ns;
  }

  /** Starts an operator (in the suite's namespace unless told otherwise), stopped by teardown(). */
  startOperator(opts: FixtureStartOptions = {}): OperatorProcess {
    const op = startOperator({ ...opts, namespace: opts.namespace ?? this.ns.name });
    this.operators.push(op);
    return op;
  }

  /** {@link startOperator}, then waits until it leads and its controller runs. */
  async startController(opts: FixtureStartOptions = {}, timeoutMs?: number): Promise<OperatorProcess> {
    const op = this.startOperator(opts);
    await op.waitForLog((l) => l.message === 'controller started', timeoutMs);
    return op;
  }

  /** Stops, one after the other, the operators still running, then deletes the namespaces. */
  async teardown(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    for (const op of this.operators) await op.stop(signal);
    await Promise.all(this.namespaces.map((ns) => ns.cleanup()));
  }
}
