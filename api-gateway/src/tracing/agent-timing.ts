/**
 * The agent's timings of one command, as its answer's `Server-Timing` header carries them (the W3C
 * Server-Timing syntax; the agent sets it only when the call came with a sampled `traceparent`):
 *
 *     server-timing: queue;dur=0.412, run;dur=35.250, output;desc=1234, exit;desc=0
 *
 * `queue`: ms the command waited for the shell; `run`: ms it ran; `output`: bytes of stdout and
 * stderr it wrote; `exit`: its exit status. The gateway turns them into the agent's span
 * (docs/adr/0019-agent-spans-through-the-gateway.md). The header comes from a sandbox: it is
 * parsed strictly and bounded, and anything else is no timing at all (never an error of the call).
 */

/** The timings of one command. */
export interface AgentTiming {
  readonly queueMs: number;
  readonly runMs: number;
  readonly outputBytes?: number;
  readonly exitCode?: number;
}

/** Longer headers are not parsed (four short metrics fit in well under this). */
const MAX_HEADER_CHARS = 256;
/** Largest duration accepted (a day; the agent's own deadline is 300 s). */
const MAX_DURATION_MS = 86_400_000;
const METRIC = /^(queue|run|output|exit);(dur|desc)=(\d{1,16}(?:\.\d{1,6})?)$/;
/**
 * The agent's own form (its four metrics in its order, sandbox-agent/src/tracing/command-timing.ts):
 * one match instead of a split and a match per metric, on every traced exec. It accepts a subset of
 * what the general parse accepts, with the same values and bounds; anything else goes that way.
 */
const AGENT_FORM =
  /^queue;dur=(\d{1,16}(?:\.\d{1,6})?), run;dur=(\d{1,16}(?:\.\d{1,6})?), output;desc=(\d{1,16}), exit;desc=(\d{1,3})$/;

/** One `name;param=number` metric, within its bounds; undefined otherwise. */
function parseMetric(text: string): { name: string; value: number } | undefined {
  const m = METRIC.exec(text);
  if (!m) return undefined;
  const [, name, param, digits] = m as unknown as [string, string, string, string];
  const value = Number(digits);
  const duration = name === 'queue' || name === 'run';
  if (duration !== (param === 'dur')) return undefined;
  if (duration) return value <= MAX_DURATION_MS ? { name, value } : undefined;
  return Number.isSafeInteger(value) && (name !== 'exit' || value <= 255) ? { name, value } : undefined;
}

/** The timings in a Server-Timing value; undefined when absent or not exactly the agent's form. */
export function parseAgentTiming(value: string | undefined): AgentTiming | undefined {
  if (value === undefined || value.length > MAX_HEADER_CHARS) return undefined;
  const m = AGENT_FORM.exec(value);
  return m ? agentForm(m) : parseAny(value);
}

/** The agent's own form, matched: its values within the same bounds as parseAny's. */
function agentForm(m: RegExpExecArray): AgentTiming | undefined {
  const queueMs = Number(m[1]);
  const runMs = Number(m[2]);
  const outputBytes = Number(m[3]);
  const exitCode = Number(m[4]);
  const valid =
    queueMs <= MAX_DURATION_MS &&
    runMs <= MAX_DURATION_MS &&
    Number.isSafeInteger(outputBytes) &&
    exitCode <= 255;
  return valid ? { queueMs, runMs, outputBytes, exitCode } : undefined;
}

/** Metrics in any order and spacing, each strictly checked. */
function parseAny(value: string): AgentTiming | undefined {
  const seen = new Map<string, number>();
  for (const part of value.split(',')) {
    const metric = parseMetric(part.trim());
    if (!metric || seen.has(metric.name)) return undefined;
    seen.set(metric.name, metric.value);
  }
  const queueMs = seen.get('queue');
  const runMs = seen.get('run');
  if (queueMs === undefined || runMs === undefined) return undefined;
  const outputBytes = seen.get('output');
  const exitCode = seen.get('exit');
  return {
    queueMs,
    runMs,
    ...(outputBytes !== undefined ? { outputBytes } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
  };
}
