/**
 * The connection matrix of the isolation spec, with a positive control per cell. A cell is a TCP
 * connection attempt (bash's /dev/tcp, bounded by 3 s) from inside the attacking session to a
 * target. It counts as closed only when the attempt failed the way a NetworkPolicy makes it fail
 * (timed out, refused or reset) AND the same probe, run in the same test from a place the policy
 * admits (the gateway's position for sandbox Pods, the node for everything else), connected: so
 * "command not found", no route, a dead server or nothing listening make the cell inconclusive,
 * and an inconclusive cell fails the test like an open one. Pure parts (script, parsing,
 * classification, verdicts) are unit-tested in test/unit/isolation-matrix.test.ts.
 */

/** Where a probe runs: the attacking session, a control pod, the node. */
export interface Place {
  /** Label in reports, e.g. `session sandbox-e2e/iso-a-1f2e3d`, `gateway position`. */
  name: string;
  /** Runs a bash script there and returns its stdout (throws when the script could not run). */
  run(script: string): Promise<string>;
}

/** One target of the matrix, and the place from where the same probe must connect. */
export interface Target {
  name: string;
  host: string;
  port: number;
  control: Place;
}

/**
 * How a probe ended: connected; timed out or refused or reset (what a policy drop or reject
 * produces); or anything else (no route, unreachable, command missing), with its message.
 */
export type Outcome =
  | { kind: 'open' }
  | { kind: 'timeout' }
  | { kind: 'refused' }
  | { kind: 'reset' }
  | { kind: 'error'; detail: string };

/** A cell's verdict: closed by the policy, OPEN (a breach), or inconclusive (proves nothing). */
export type Verdict = 'closed' | 'OPEN' | 'inconclusive';

/** One cell's result: both probes, the verdict and why. */
export interface CellResult {
  name: string;
  host: string;
  port: number;
  attack: Outcome;
  controlPlace: string;
  control: Outcome;
  verdict: Verdict;
  why: string;
}

/** Seconds a connection attempt may take before it counts as timed out. */
export const PROBE_TIMEOUT_S = 3;

const NAME = /^[a-z0-9][a-z0-9.-]*$/;
const HOST = /^[0-9a-f.:]+$/i;

/**
 * One bash script that tries every target at once and prints `name<TAB>exit code<TAB>message`
 * per target (the message is bash's or timeout's stderr on one line). Exit code 124: timed out.
 */
export function probeScript(targets: Array<Pick<Target, 'name' | 'host' | 'port'>>): string {
  const lines = targets.map((t) => {
    if (!NAME.test(t.name) || !HOST.test(t.host) || !Number.isInteger(t.port)) {
      throw new Error(`matrix: bad target ${JSON.stringify(t)}`);
    }
    return `p ${t.name} ${t.host} ${t.port} &`;
  });
  return [
    'p() {',
    `  local m c; m=$(timeout ${PROBE_TIMEOUT_S} bash -c "exec 3<>/dev/tcp/$2/$3" 2>&1); c=$?`,
    `  printf '%s\\t%s\\t%s\\n' "$1" "$c" "\${m//[$'\\n\\t']/ }"`,
    '}',
    ...lines,
    'wait',
  ].join('\n');
}

/** The outcome of one probe from its exit code and message. */
export function classify(exitCode: number, message: string): Outcome {
  if (exitCode === 0) return { kind: 'open' };
  if (exitCode === 124) return { kind: 'timeout' };
  if (/Connection refused/i.test(message)) return { kind: 'refused' };
  if (/Connection reset/i.test(message)) return { kind: 'reset' };
  return { kind: 'error', detail: `exit ${exitCode}: ${message.trim() || '(no message)'}` };
}

/** Parses probeScript's output; a target with no line means the script did not run it: an error. */
export function parseProbes(names: string[], stdout: string): Map<string, Outcome> {
  const byName = new Map<string, Outcome>();
  for (const line of stdout.split('\n')) {
    const [name, code, ...rest] = line.split('\t');
    if (!name || code === undefined || !/^\d+$/.test(code)) continue;
    byName.set(name, classify(Number(code), rest.join(' ')));
  }
  for (const n of names) {
    if (!byName.has(n)) throw new Error(`matrix: no result for ${n} in:\n${stdout}`);
  }
  return byName;
}

/** An outcome in words. */
export function describeOutcome(o: Outcome): string {
  return o.kind === 'error' ? o.detail : o.kind;
}

/**
 * The verdict of a cell: OPEN when the attack connected; closed only when it failed as a policy
 * makes it fail and the control connected; inconclusive otherwise.
 */
export function verdict(
  attack: Outcome,
  control: Outcome,
  controlPlace: string,
): { verdict: Verdict; why: string } {
  if (attack.kind === 'open') return { verdict: 'OPEN', why: 'the attack connected' };
  if (attack.kind === 'error') {
    return { verdict: 'inconclusive', why: `the attack failed without reaching a policy: ${attack.detail}` };
  }
  if (control.kind !== 'open') {
    return {
      verdict: 'inconclusive',
      why: `control from ${controlPlace} did not connect (${describeOutcome(control)}): the target may be down`,
    };
  }
  return { verdict: 'closed', why: `${attack.kind}; control from ${controlPlace} connected` };
}

/** Combines the attack's and the controls' outcomes into cell results (pure). */
export function cellResults(
  targets: Target[],
  attack: Map<string, Outcome>,
  controls: Map<string, Outcome>,
): CellResult[] {
  return targets.map((t) => {
    const a = attack.get(t.name)!;
    const c = controls.get(t.name)!;
    return {
      name: t.name,
      host: t.host,
      port: t.port,
      attack: a,
      controlPlace: t.control.name,
      control: c,
      ...verdict(a, c, t.control.name),
    };
  });
}

/**
 * Runs the matrix: every target from `attacker`, and each target's control from its own place, all
 * at once (one script per place), and returns the cells.
 */
export async function runMatrix(attacker: Place, targets: Target[]): Promise<CellResult[]> {
  const names = targets.map((t) => t.name);
  if (new Set(names).size !== names.length)
    throw new Error(`matrix: duplicate cell names in ${names.join(' ')}`);
  const byPlace = new Map<Place, Target[]>();
  for (const t of targets) byPlace.set(t.control, [...(byPlace.get(t.control) ?? []), t]);
  const [attack, ...controlParts] = await Promise.all([
    attacker.run(probeScript(targets)).then((out) => parseProbes(names, out)),
    ...[...byPlace].map(([place, ts]) =>
      place.run(probeScript(ts)).then((out) =>
        parseProbes(
          ts.map((t) => t.name),
          out,
        ),
      ),
    ),
  ]);
  const controls = new Map(controlParts.flatMap((m) => [...m]));
  return cellResults(targets, attack, controls);
}

/** The cells that fail the proof: OPEN ones and inconclusive ones, one line each. */
export function failures(results: CellResult[]): { open: string[]; inconclusive: string[] } {
  const line = (r: CellResult): string => `${r.name} ${r.host}:${r.port}: ${r.why}`;
  return {
    open: results.filter((r) => r.verdict === 'OPEN').map(line),
    inconclusive: results.filter((r) => r.verdict === 'inconclusive').map(line),
  };
}

/** The matrix as a table for the test log. */
export function formatMatrix(title: string, results: CellResult[]): string {
  const rows = results.map(
    (r) =>
      `  ${r.name.padEnd(34)} ${`${r.host}:${r.port}`.padEnd(22)} ${r.verdict.padEnd(12)} ` +
      `attack: ${describeOutcome(r.attack)}; control (${r.controlPlace}): ${describeOutcome(r.control)}`,
  );
  return [title, ...rows].join('\n');
}
