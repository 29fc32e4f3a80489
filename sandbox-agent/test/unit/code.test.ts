/**
 * /v1/code against the real engine (IPython in the venv of `make code-venv`): state kept between runs,
 * results and displays in every MIME type, errors with tracebacks, timeouts that leave the context
 * usable, restart, several contexts, a kernel that dies, and the bounds of hostile output.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';

import {
  CODE_ITEM_MAX_BYTES,
  CODE_STREAM_MAX_BYTES,
  type CodeContextList,
  type CodeDataEvent,
  type CodeErrorEvent,
} from '@sandbox-platform/api';

import {
  BRIDGE_PATH,
  contextCall,
  resultText,
  runCode,
  streamText,
  testPython,
  waitForState,
} from './helpers/code-client.js';
import { problemOf, TestAgent } from './helpers/test-agent.js';

jest.setTimeout(120_000);

describe('code contexts', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start(
      {},
      { code: { python: testPython(), bridgePath: BRIDGE_PATH, maxContexts: 3 } },
    );
  });
  afterAll(() => agent.stop());

  it('keeps variables between runs: x = 41, then x + 1 is 42', async () => {
    const first = await runCode(agent, { code: 'x = 41' });
    expect(first.status).toBe(200);
    expect(first.end).toMatchObject({ type: 'end', status: 'ok', contextReset: true, truncated: false });
    const second = await runCode(agent, { code: 'x + 1' });
    expect(resultText(second)).toBe('42');
    expect(second.end).toMatchObject({ status: 'ok', contextReset: false, executionCount: 2 });
  });

  it('streams stdout and stderr', async () => {
    const r = await runCode(agent, { code: 'import sys\nprint("out")\nprint("err", file=sys.stderr)' });
    expect(streamText(r, 'stdout')).toBe('out\n');
    expect(streamText(r, 'stderr')).toBe('err\n');
  });

  it('reports an exception with its name, value and traceback', async () => {
    const r = await runCode(agent, { code: 'def f():\n    return 1 / 0\nf()' });
    const error = r.events.find((e) => e.type === 'error') as CodeErrorEvent;
    expect(error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(error.traceback.join('\n')).toContain('return 1 / 0');
    expect(error.traceback.join('\n')).not.toContain('\u001b['); // no terminal colours
    expect(r.end.status).toBe('error');
  });

  it('gives every MIME type of a display: html, markdown, latex, json, svg', async () => {
    const code = [
      'from IPython.display import display, HTML, Markdown, Latex, JSON, SVG',
      'display(HTML("<b>hi</b>"), Markdown("# T"), Latex(r"$x^2$"), JSON({"a": 1}))',
      'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\'))',
    ].join('\n');
    const r = await runCode(agent, { code });
    const mimes = r.events.flatMap((e) => (e.type === 'display' ? Object.keys(e.data) : []));
    expect(mimes).toEqual(
      expect.arrayContaining([
        'text/html',
        'text/markdown',
        'text/latex',
        'application/json',
        'image/svg+xml',
      ]),
    );
    const json = r.events.find((e) => e.type === 'display' && e.data['application/json']) as CodeDataEvent;
    expect(JSON.parse(json.data['application/json'] ?? '')).toEqual({ a: 1 });
  });

  it('sends raw PNG bytes of a repr as base64 and JSON with NaN as valid JSON', async () => {
    const code = [
      'class P:',
      '    def _repr_png_(self): return b"\\x89PNG"',
      '    def _repr_json_(self): return {"a": float("nan"), "b": 1}',
      'P()',
    ].join('\n');
    const r = await runCode(agent, { code });
    const result = r.events.find((e) => e.type === 'result') as CodeDataEvent;
    expect(Buffer.from(result.data['image/png'] ?? '', 'base64').toString('latin1')).toBe('\x89PNG');
    expect(JSON.parse(result.data['application/json'] ?? '')).toEqual({ a: null, b: 1 });
  });

  it('shows a matplotlib chart as image/png and a DataFrame as text/html', async () => {
    const chart = await runCode(agent, {
      code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()',
    });
    const png = chart.events.find((e) => e.type === 'display' && e.data['image/png']) as CodeDataEvent;
    expect(
      Buffer.from(png.data['image/png'] ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    const frame = await runCode(agent, { code: 'import pandas as pd\npd.DataFrame({"a": [1, 2]})' });
    const result = frame.events.find((e) => e.type === 'result') as CodeDataEvent;
    expect(result.data['text/html']).toContain('<table');
  });

  it('captures what subprocesses and C code write, in order with the displays around it', async () => {
    const code = [
      'import os, subprocess',
      'print("before")',
      'subprocess.run(["echo", "child"])',
      'os.write(1, b"raw\\n")',
      'from IPython.display import display',
      'display("shown")',
      'print("after")',
    ].join('\n');
    const r = await runCode(agent, { code });
    const seq = r.events.flatMap((e) =>
      e.type === 'stdout' ? [e.text] : e.type === 'display' ? [`<${e.data['text/plain']}>`] : [],
    );
    expect(seq.join('')).toBe("before\nchild\nraw\n<'shown'>after\n");
  });

  it('shows a figure left open at the end of a cell (%matplotlib inline, no plt.show) as image/png', async () => {
    const r = await runCode(agent, {
      code: '%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.figure()\nplt.bar([1], [2]);',
    });
    const pngs = r.events.filter((e) => e.type === 'display' && e.data['image/png']);
    expect(pngs).toHaveLength(1);
  });

  it('interrupts a sleeping cell on request and keeps the state', async () => {
    await runCode(agent, { code: 'z = 7', context: 'intr' });
    const running = runCode(agent, { code: 'import time\ntime.sleep(30)', context: 'intr' });
    // Interrupt once the run is in the kernel (a context with no run ignores an interrupt).
    await waitForState(agent, 'intr', 'busy');
    await new Promise((r) => setTimeout(r, 200)); // into time.sleep
    expect((await contextCall(agent, 'POST', '/v1/code/contexts/intr/interrupt')).status).toBe(200);
    const r = await running;
    expect(r.end.status).toBe('interrupted');
    expect(r.events.find((e) => e.type === 'error')).toMatchObject({ name: 'KeyboardInterrupt' });
    const after = await runCode(agent, { code: 'z * 6', context: 'intr' });
    expect(resultText(after)).toBe('42');
    expect(after.end.contextReset).toBe(false);
    await contextCall(agent, 'DELETE', '/v1/code/contexts/intr');
  });

  it('ends the engine at exit(); the next run gets a new one', async () => {
    await runCode(agent, { code: 'w = 1', context: 'quits' });
    const r = await runCode(agent, { code: 'exit()', context: 'quits' });
    expect(r.end.status).toBe('ok');
    await waitForState(agent, 'quits', 'stopped');
    const after = await runCode(agent, { code: "'w' in dir()", context: 'quits' });
    expect(resultText(after)).toBe('False');
    expect(after.end.contextReset).toBe(true);
    await contextCall(agent, 'DELETE', '/v1/code/contexts/quits');
  });

  it('stops `while True: pass` at its timeout and keeps the context and its state', async () => {
    await runCode(agent, { code: 'kept = "still here"' });
    const r = await runCode(agent, { code: 'while True: pass', timeoutSeconds: 1 });
    expect(r.end.status).toBe('timeout');
    expect(r.events.find((e) => e.type === 'error')).toMatchObject({ name: 'KeyboardInterrupt' });
    const after = await runCode(agent, { code: 'kept' });
    expect(resultText(after)).toBe("'still here'");
    expect(after.end.contextReset).toBe(false);
  });

  it('kills a kernel that ignores the interrupt at its timeout; the next run gets a new one', async () => {
    const code =
      'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.05)';
    const r = await runCode(agent, { code, context: 'stubborn', timeoutSeconds: 1 });
    expect(r.end.status).toBe('timeout');
    const after = await runCode(agent, { code: '1 + 1', context: 'stubborn' });
    expect(resultText(after)).toBe('2');
    expect(after.end.contextReset).toBe(true);
    await contextCall(agent, 'DELETE', '/v1/code/contexts/stubborn');
  });

  it('restart clears the state', async () => {
    await runCode(agent, { code: 'y = 5' });
    const restarted = await contextCall(agent, 'POST', '/v1/code/contexts/default/restart');
    expect(restarted.status).toBe(200);
    expect(restarted.info).toMatchObject({ name: 'default', state: 'idle', executionCount: 0 });
    const r = await runCode(agent, { code: 'y' });
    expect(r.events.find((e) => e.type === 'error')).toMatchObject({ name: 'NameError' });
  });

  it('keeps contexts apart, lists them, deletes them, and bounds how many there are', async () => {
    await runCode(agent, { code: 'v = "a"', context: 'ctx-a' });
    await runCode(agent, { code: 'v = "b"', context: 'ctx-b' });
    expect(resultText(await runCode(agent, { code: 'v', context: 'ctx-a' }))).toBe("'a'");
    const list = await agent.send({ method: 'GET', path: '/v1/code/contexts' });
    const names = (JSON.parse(list.body.toString()) as CodeContextList).contexts.map((c) => c.name);
    expect(names).toEqual(['default', 'ctx-a', 'ctx-b']);
    const full = await runCode(agent, { code: '1', context: 'ctx-c' });
    expect(full.status).toBe(409);
    expect(problemOf(full.res).type).toBe('https://sandbox.dev/problems/too-many-contexts');
    expect((await contextCall(agent, 'DELETE', '/v1/code/contexts/ctx-b')).status).toBe(204);
    expect((await contextCall(agent, 'DELETE', '/v1/code/contexts/ctx-b')).status).toBe(404);
    expect((await runCode(agent, { code: '1', context: 'ctx-c' })).status).toBe(200);
    await contextCall(agent, 'DELETE', '/v1/code/contexts/ctx-a');
    await contextCall(agent, 'DELETE', '/v1/code/contexts/ctx-c');
  });

  it('ends a run whose kernel dies with kernel-died; the next run starts a new kernel', async () => {
    const r = await runCode(agent, { code: 'import os\nos._exit(3)', context: 'dies' });
    expect(r.end.status).toBe('kernel-died');
    expect(r.events.find((e) => e.type === 'error')).toMatchObject({ name: 'KernelDied' });
    const next = await runCode(agent, { code: '2 * 21', context: 'dies' });
    expect(resultText(next)).toBe('42');
    expect(next.end.contextReset).toBe(true);
    await contextCall(agent, 'DELETE', '/v1/code/contexts/dies');
  });

  it('SECURITY: bounds a cell printing 100 MiB and a display of a 50 MiB image, with a clear marker', async () => {
    const printed = await runCode(agent, { code: 'print("x" * (100 * 1024 * 1024))' });
    const out = streamText(printed, 'stdout');
    expect(out.length).toBe(CODE_STREAM_MAX_BYTES);
    expect(printed.end.truncated).toBe(true);
    expect(printed.end.dropped.stdout).toBe(100 * 1024 * 1024 + 1 - CODE_STREAM_MAX_BYTES);
    const image = await runCode(agent, {
      code: 'from IPython.display import display\ndisplay({"image/png": "A" * (50 * 1024 * 1024), "text/plain": "<big>"}, raw=True)',
    });
    const display = image.events.find((e) => e.type === 'display') as CodeDataEvent;
    expect(display.data).toEqual({ 'text/plain': '<big>' });
    expect(display.omitted).toEqual([{ mime: 'image/png', bytes: 50 * 1024 * 1024 }]);
    expect(image.end.truncated).toBe(true);
    expect(image.res.body.length).toBeLessThan(CODE_ITEM_MAX_BYTES);
  });

  it('validates the request', async () => {
    expect((await runCode(agent, { code: '1', context: 'Bad Name' })).status).toBe(400);
    expect((await runCode(agent, { code: '1', language: 'cobol' })).status).toBe(400);
    expect((await runCode(agent, { code: '1', timeoutSeconds: 0 })).status).toBe(400);
    expect((await contextCall(agent, 'POST', '/v1/code/contexts/none/interrupt')).status).toBe(404);
  });
});

describe('code without a kernel', () => {
  it('answers 503 code-unavailable with the reason when the image has no Python engine', async () => {
    const agent = await TestAgent.start({}, { code: { python: '/bin/false', bridgePath: BRIDGE_PATH } });
    try {
      const r = await runCode(agent, { code: '1' });
      expect(r.status).toBe(503);
      expect(problemOf(r.res)).toMatchObject({ type: 'https://sandbox.dev/problems/code-unavailable' });
      const list = await agent.send({ method: 'GET', path: '/v1/code/contexts' });
      expect(JSON.parse(list.body.toString())).toEqual({ contexts: [] });
    } finally {
      await agent.stop();
    }
  });
});
