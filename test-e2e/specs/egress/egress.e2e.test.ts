/**
 * e2e: egress by name (issue 30, docs/adr/0034). A session reaches an upstream only through the
 * platform's egress proxy, and only the hosts its spec.egress allows; the upstreams stand for the
 * internet and are Services of this cluster with their own DNS names (test-support/src/egress-upstream.ts).
 *
 * - an allowed host is answered through the proxy; a host not allowed is refused and audited;
 * - a process that ignores HTTP(S)_PROXY reaches nothing (NetworkPolicy), while the same request
 *   through the proxy (the control) is answered;
 * - CONNECT with an SNI other than the CONNECT host is closed;
 * - a rule added at runtime (PUT /v1/sessions/{name}/egress) is in effect within 1 s;
 * - the sandbox gets the proxy as HTTP(S)_PROXY and trusts the namespace's interception CA by
 *   itself (curl and Python with no proxy or CA option);
 * - an injected credential (HTTPS, TLS interception with the namespace CA) reaches the upstream,
 *   and the sandbox's environment, files and readable process memory do not hold it, while the
 *   same scan finds a canary planted through spec.env (so the scan can find a secret);
 * - the audit trail holds the exec and the egress decisions; altering one stored record is
 *   detected by the verify call.
 *
 * The spec switches the chart to reach in-cluster upstreams (egressProxy.blockClusterRanges=false,
 * egressTo = the upstream namespace, upstreamCA = the test CA) with `helm upgrade
 * --reset-then-reuse-values`, and restores the defaults after. Local cluster only (helm, openssl).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { SandboxSession } from '@sandbox-platform/api';

import { kubeClients, kubectl, REPO_ROOT } from '../../src/framework/index.js';
import { describeOnLocal } from '../../src/framework/not-run.js';
import {
  createSession,
  deleteSession,
  gatewayClient,
  namespaceOf,
  uniqueName,
} from '../isolation/support.js';
import {
  startUpstream,
  stopUpstream,
  UPSTREAM_HTTP_PORT as HTTP_PORT,
  UPSTREAM_HTTPS_PORT as HTTPS_PORT,
  UPSTREAM_NS,
  upstreamCertificates,
  upstreamHost as host,
  upstreamLog,
} from '@sandbox-platform/test-support';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const PROXY_NAME = `${RELEASE}-sandbox-platform-egress-proxy`;
const PROXY = `http://${PROXY_NAME}.${PLATFORM_NS}.svc.cluster.local:3128`;
const SECRET_VALUE = `Bearer egress-e2e-${Date.now().toString(36)}-c0ffee`;
const CANARY_VALUE = `canary-${Date.now().toString(36)}-d00d`;

const kube = kubeClients();

function helm(...args: string[]): string {
  const bin = join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'helm');
  return execFileSync(bin, args, { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

/** Upgrades the release keeping its values, with these egressProxy settings. */
function setProxyValues(v: { blockClusterRanges: boolean; upstreamCA: string; egressTo: unknown[] }): void {
  helm(
    'upgrade',
    RELEASE,
    join(REPO_ROOT, 'charts', 'sandbox-platform'),
    '-n',
    PLATFORM_NS,
    '--reset-then-reuse-values',
    '--set',
    `egressProxy.blockClusterRanges=${v.blockClusterRanges}`,
    '--set-string',
    `egressProxy.upstreamCA=${v.upstreamCA}`,
    '--set-json',
    `egressProxy.egressTo=${JSON.stringify(v.egressTo)}`,
    '--wait',
    '--timeout',
    '4m',
  );
}

/** A JSON answer of the gateway, read loosely by the tests. */
type Answer = Record<string, unknown> & {
  egress?: { rules?: unknown[] } & Record<string, unknown>;
  records?: Array<{ kind: string; outcome: string; detail: Record<string, unknown> }>;
};

/** A gateway REST call the SDK has no method for yet. */
async function gatewayCall(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Answer }> {
  const res = await fetch(`${process.env.E2E_GATEWAY_URL}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${process.env.E2E_GATEWAY_API_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as Answer };
}

describeOnLocal('egress by name through the egress proxy', () => {
  const gw = gatewayClient('e2e');
  const ns = namespaceOf('e2e');
  const name = uniqueName('egress');
  const q = `?namespace=${ns}`;
  let putDoneAt = 0;

  const sh = async (
    command: string,
    timeoutSeconds = 30,
  ): Promise<{ stdout: string; stderr: string; exitCode: number }> =>
    gw.exec(name, { command, timeoutSeconds });

  beforeAll(async () => {
    const certs = upstreamCertificates();
    await startUpstream(kube, certs);
    setProxyValues({
      blockClusterRanges: false,
      upstreamCA: certs.caPem,
      egressTo: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': UPSTREAM_NS } } }],
    });
    await kube.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: `${name}-cred` },
        stringData: { authorization: SECRET_VALUE, canary: CANARY_VALUE },
      },
    });
    const egress: NonNullable<SandboxSession['spec']['egress']> = {
      inheritNamespaceDefaults: false,
      rules: [
        { host: host('allowed-upstream'), ports: [HTTP_PORT] },
        {
          host: host('allowed-upstream'),
          ports: [HTTPS_PORT],
          pathPrefixes: ['/api/'],
          injectHeaders: [
            { name: 'Authorization', secretKeyRef: { name: `${name}-cred`, key: 'authorization' } },
          ],
        },
      ],
    };
    await createSession(kube, ns, name, {
      egress,
      env: [{ name: 'CANARY', valueFrom: { secretKeyRef: { name: `${name}-cred`, key: 'canary' } } }],
    } as never);
  }, 600_000);

  afterAll(async () => {
    await deleteSession(kube, ns, name);
    await kube.core.deleteNamespacedSecret({ namespace: ns, name: `${name}-cred` }).catch(() => undefined);
    setProxyValues({ blockClusterRanges: true, upstreamCA: '', egressTo: [] });
    await stopUpstream(kube);
  }, 600_000);

  it('answers an allowed host through the proxy and refuses a host not allowed (403)', async () => {
    const ok = await sh(`curl -sS -x ${PROXY} http://${host('allowed-upstream')}:${HTTP_PORT}/hello`);
    expect(ok.exitCode).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ upstream: 'egress-e2e', url: '/hello' });
    const no = await sh(
      `curl -sS -o /dev/null -w '%{http_code}' -x ${PROXY} http://${host('denied-upstream')}:${HTTP_PORT}/hello`,
    );
    expect(no.stdout).toBe('403');
    const tls = await sh(
      `curl -sS -o /dev/null -w '%{http_code}' -x ${PROXY} https://${host('denied-upstream')}:${HTTPS_PORT}/ 2>&1; echo " rc=$?"`,
    );
    expect(tls.stdout).toMatch(/403|CONNECT/);
  });

  it('a process that ignores the proxy reaches nothing; the same request through the proxy is answered', async () => {
    const [svc, pod] = await Promise.all([
      kube.core.readNamespacedService({ name: 'allowed-upstream', namespace: UPSTREAM_NS }),
      kube.core.readNamespacedPod({ name: 'upstream', namespace: UPSTREAM_NS }),
    ]);
    const direct = await sh(
      [
        `curl -sS --noproxy '*' --max-time 3 http://${host('allowed-upstream')}:${HTTP_PORT}/direct; echo "name rc=$?"`,
        `curl -sS --noproxy '*' --max-time 3 http://${svc.spec!.clusterIP}:${HTTP_PORT}/direct; echo "svc rc=$?"`,
        `curl -sS --noproxy '*' --max-time 3 http://${pod.status!.podIP}:${HTTP_PORT}/direct; echo "pod rc=$?"`,
        `curl -sS -o /dev/null -w 'control %{http_code}\\n' -x ${PROXY} http://${host('allowed-upstream')}:${HTTP_PORT}/control`,
      ].join('\n'),
      60,
    );
    console.log(`direct connections from the sandbox:\n${direct.stdout}${direct.stderr}`);
    const rc = (label: string): number => Number(new RegExp(`${label} rc=(\\d+)`).exec(direct.stdout)?.[1]);
    // Timed out (28) where the policy drops, refused (7) where it rejects: never answered (0).
    for (const label of ['name', 'svc', 'pod']) expect([7, 28]).toContain(rc(label));
    expect(direct.stdout).toContain('control 200');
  });

  it("resolves only what its rules allow: the allowed host and the proxy's own name, no other or cluster name", async () => {
    const [allowed, proxy] = await Promise.all([
      kube.core.readNamespacedService({ name: 'allowed-upstream', namespace: UPSTREAM_NS }),
      kube.core.readNamespacedService({ name: PROXY_NAME, namespace: PLATFORM_NS }),
    ]);
    const names = [
      host('allowed-upstream'),
      `${PROXY_NAME}.${PLATFORM_NS}.svc`,
      host('denied-upstream'),
      'kubernetes.default.svc.cluster.local',
      `${RELEASE}-sandbox-platform-gateway.${PLATFORM_NS}.svc.cluster.local`,
      `x${Date.now().toString(36)}.exfiltrated.example`,
    ];
    const py = [
      'import socket',
      `for n in ${JSON.stringify(names)}:`,
      '    try: print(n, socket.getaddrinfo(n, None, socket.AF_INET)[0][4][0])',
      '    except socket.gaierror as e: print(n, "error:" + str(e.args[0]))',
    ].join('\n');
    const r = await sh(`cat /etc/resolv.conf; python3 -c '${py}'`);
    console.log(`sandbox DNS:\n${r.stdout}${r.stderr}`);
    // The proxy's Service is the only name server (no cluster DNS, no search path).
    expect(r.stdout.match(/^nameserver .*$/gm)).toEqual([`nameserver ${proxy.spec!.clusterIP}`]);
    expect(r.stdout).not.toMatch(/^search /m);
    const got = new Map(
      r.stdout
        .split('\n')
        .filter((l) => names.some((n) => l.startsWith(`${n} `)))
        .map((l) => l.split(' ') as [string, string]),
    );
    expect(got.get(names[0]!)).toBe(allowed.spec!.clusterIP);
    expect(got.get(names[1]!)).toBe(proxy.spec!.clusterIP);
    // NXDOMAIN (EAI_NONAME, -2) as for a name that does not exist: the sandbox learns nothing.
    for (const n of names.slice(2)) expect([n, got.get(n)]).toEqual([n, 'error:-2']);
  });

  it('closes a CONNECT tunnel whose SNI is not the CONNECT host', async () => {
    const py = [
      'import socket, ssl, sys',
      `p = socket.create_connection(("${PROXY_NAME}.${PLATFORM_NS}.svc.cluster.local", 3128), timeout=5)`,
      `p.sendall(b"CONNECT ${host('allowed-upstream')}:${HTTPS_PORT} HTTP/1.1\\r\\n\\r\\n")`,
      'print(p.recv(100).split(b"\\r\\n")[0].decode())',
      'c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE',
      'try:',
      `    c.wrap_socket(p, server_hostname="${host('denied-upstream')}"); print("handshake done")`,
      'except Exception as e:',
      '    print("closed", type(e).__name__)',
    ].join('\n');
    const r = await sh(`python3 -c '${py}'`);
    expect(r.stdout.trim().split('\n')).toEqual([
      'HTTP/1.1 200 Connection Established',
      expect.stringMatching(/^closed /),
    ]);
  });

  it('a rule added at runtime is in effect within 1 s', async () => {
    const before = await sh(
      `curl -sS -o /dev/null -w '%{http_code}' -x ${PROXY} http://${host('denied-upstream')}:${HTTP_PORT}/`,
    );
    expect(before.stdout).toBe('403');
    const current = await gatewayCall('GET', `/v1/sessions/${name}/egress${q}`);
    const rules = [
      ...(current.json.egress?.rules ?? []),
      { host: host('denied-upstream'), ports: [HTTP_PORT] },
    ];
    // The sandbox polls every 50 ms from before the change; its first success is stamped with the
    // node's clock, which the test shares (same machine).
    const poller = sh(
      `end=$(( $(date +%s%3N) + 8000 )); while [ $(date +%s%3N) -lt $end ]; do ` +
        `c=$(curl -s -o /dev/null -w '%{http_code}' -x ${PROXY} http://${host('denied-upstream')}:${HTTP_PORT}/); ` +
        `if [ "$c" = 200 ]; then date +%s%3N; exit 0; fi; sleep 0.05; done; echo never`,
      30,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const put = await gatewayCall('PUT', `/v1/sessions/${name}/egress${q}`, {
      ...current.json.egress,
      rules,
    });
    putDoneAt = Date.now();
    expect(put.status).toBe(200);
    const firstOk = Number((await poller).stdout.trim());
    const delayMs = firstOk - putDoneAt;
    console.log(`rule change: first allowed request ${delayMs} ms after the PUT answered`);
    expect(delayMs).toBeLessThanOrEqual(1000);
  }, 60_000);

  it('injects the credential over intercepted HTTPS; the sandbox holds neither it in env, files nor readable memory, but the canary is found', async () => {
    const cm = await kube.core
      .readNamespacedConfigMap({ name: 'sandbox-egress-ca', namespace: ns })
      .catch(() => undefined);
    // The CA ConfigMap appears with the first intercepted connection; fetch it through the proxy once.
    await sh(`curl -sk -o /dev/null -x ${PROXY} https://${host('allowed-upstream')}:${HTTPS_PORT}/api/warm`);
    const ca = cm ?? (await kube.core.readNamespacedConfigMap({ name: 'sandbox-egress-ca', namespace: ns }));
    await gw.writeFile(name, 'egress-ca.crt', Buffer.from(ca.data!['ca.crt']!));
    const r = await sh(
      `curl -sS --cacert egress-ca.crt -x ${PROXY} https://${host('allowed-upstream')}:${HTTPS_PORT}/api/models`,
    );
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ scheme: 'https', url: '/api/models' });
    const seen = (await upstreamLog(kube)).filter((l) => l.url === '/api/models');
    expect(seen.at(-1)?.headers.authorization).toBe(SECRET_VALUE);
    const outside = await sh(
      `curl -sS -o /dev/null -w '%{http_code}' --cacert egress-ca.crt -x ${PROXY} https://${host('allowed-upstream')}:${HTTPS_PORT}/admin`,
    );
    expect(outside.stdout).toBe('403');
    const scan = [
      'import os, re, sys',
      'needles = {"secret": sys.argv[1].encode(), "canary": sys.argv[2].encode()}',
      'found = {k: [] for k in needles}; read = {"environ": 0, "mem": 0, "files": 0}',
      'for pid in [p for p in os.listdir("/proc") if p.isdigit()]:',
      '    try:',
      '        env = open(f"/proc/{pid}/environ", "rb").read(); read["environ"] += 1',
      '        for k, n in needles.items():',
      '            if n in env: found[k].append(f"environ:{pid}")',
      '        maps = open(f"/proc/{pid}/maps").read().splitlines(); mem = open(f"/proc/{pid}/mem", "rb", 0)',
      '    except OSError: continue',
      '    for line in maps:',
      '        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)',
      '        if not m: continue',
      '        lo, hi = int(m.group(1), 16), int(m.group(2), 16)',
      '        if hi - lo > 1 << 30: continue',
      '        try:',
      '            mem.seek(lo); chunk = mem.read(hi - lo); read["mem"] += len(chunk)',
      '        except (OSError, OverflowError, ValueError): continue',
      '        for k, n in needles.items():',
      '            if n in chunk: found[k].append(f"mem:{pid}")',
      'for root in ["/workspace", "/tmp", "/etc", "/home", "/var"]:',
      '    for d, _, fs in os.walk(root):',
      '        for f in fs:',
      '            try: data = open(os.path.join(d, f), "rb").read(1 << 24); read["files"] += 1',
      '            except OSError: continue',
      '            for k, n in needles.items():',
      '                if n in data: found[k].append("file:" + os.path.join(d, f))',
      'me = f"mem:{os.getpid()}"',
      'import json; print(json.dumps({"found": {k: sorted(set(x for x in v if x != me)) for k, v in found.items()}, "read": read}))',
    ].join('\n');
    await gw.writeFile(name, '.scan.py', Buffer.from(scan));
    // The needles travel as the scan's arguments, so the scanner's own argv holds them: read from
    // a file deleted before the scan instead would still leave them in its memory. The secret is
    // passed base64-encoded and decoded inside, so no process holds it before the scan decodes it.
    const out = await sh(
      `python3 -c 'import base64,runpy,sys; sys.argv=["s", base64.b64decode(sys.argv[1]).decode(), base64.b64decode(sys.argv[2]).decode()]; runpy.run_path(".scan.py", run_name="__main__")' ` +
        `${Buffer.from(SECRET_VALUE).toString('base64')} ${Buffer.from(CANARY_VALUE).toString('base64')}; rm -f .scan.py`,
      120,
    );
    console.log(`secret scan inside the sandbox: ${out.stdout}${out.stderr}`);
    // The scanner decodes both needles into its own memory: its own pid's memory is left out.
    const { found } = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as {
      found: Record<string, string[]>;
    };
    const hits = (k: string): string[] => found[k] ?? [];
    expect(hits('canary').some((h) => h.startsWith('environ:'))).toBe(true);
    expect(hits('secret')).toEqual([]);
  }, 180_000);

  it('uses the proxy and trusts the namespace CA by itself: curl and Python with no proxy or CA option', async () => {
    const env = await sh('echo "$HTTPS_PROXY $http_proxy $NO_PROXY"');
    expect(env.stdout.trim()).toBe(
      `http://${PROXY_NAME}.${PLATFORM_NS}.svc:3128 http://${PROXY_NAME}.${PLATFORM_NS}.svc:3128 localhost,127.0.0.1,::1`,
    );
    const url = `https://${host('allowed-upstream')}:${HTTPS_PORT}/api/by-itself`;
    // The proxy publishes the namespace's CA when it starts; a Pod that started first gets it when
    // the kubelet next syncs the ConfigMap volume and the agent's bundle picks it up (every 5 s).
    const started = Date.now();
    const r = await sh(`for i in $(seq 60); do curl -sS ${url} && exit 0; sleep 2; done; exit 1`, 150);
    console.log(`plain curl over intercepted HTTPS answered after ${Date.now() - started} ms`);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      scheme: 'https',
      url: '/api/by-itself',
    });
    const py = await sh(
      `python3 -c 'import json, urllib.request; print(json.load(urllib.request.urlopen("${url}?py"))["url"])'`,
    );
    expect(py.stdout.trim()).toBe('/api/by-itself?py');
    const seen = (await upstreamLog(kube)).filter((l) => l.url.startsWith('/api/by-itself'));
    expect(seen.map((l) => l.headers.authorization)).toEqual([SECRET_VALUE, SECRET_VALUE]);
    // The controls: without the bundle's variables curl does not trust the interception (60), and
    // with the proxy left out the request is refused by NetworkPolicy.
    const untrusted = await sh(`env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -sS ${url}; echo "rc=$?"`);
    expect(untrusted.stdout).toMatch(/rc=60/);
    const direct = await sh(`curl -sS --noproxy '*' --max-time 3 ${url}; echo "rc=$?"`);
    expect(direct.stdout).toMatch(/rc=(7|28)/);
  }, 200_000);

  it('audits the exec and the egress decisions, and verify detects one altered record', async () => {
    await new Promise((r) => setTimeout(r, 1000));
    const records = await gatewayCall('GET', `/v1/sessions/${name}/audit${q}&limit=1000`);
    expect(records.status).toBe(200);
    const list = records.json.records as Array<{
      kind: string;
      outcome: string;
      detail: Record<string, unknown>;
    }>;
    expect(list.some((r) => r.kind === 'exec')).toBe(true);
    expect(
      list.some(
        (r) => r.kind === 'egress' && r.outcome === 'allowed' && r.detail.host === host('allowed-upstream'),
      ),
    ).toBe(true);
    expect(
      list.some(
        (r) => r.kind === 'egress' && r.outcome === 'denied' && r.detail.host === host('denied-upstream'),
      ),
    ).toBe(true);
    expect(list.some((r) => r.kind === 'egress' && r.detail.reason === 'sni-mismatch')).toBe(true);
    // A name no rule allows, asked of the sandbox's DNS, and a connection that bypassed the proxy
    // (dropped by the NetworkPolicy, reported by the node's drop reporter).
    expect(
      list.some(
        (r) =>
          r.kind === 'egress' &&
          r.detail.reason === 'dns-no-rule' &&
          r.detail.host === host('denied-upstream'),
      ),
    ).toBe(true);
    const upstreamPod = await kube.core.readNamespacedPod({ name: 'upstream', namespace: UPSTREAM_NS });
    const direct = list.filter((r) => r.kind === 'egress' && r.detail.reason === 'direct');
    console.log(`direct-connection records: ${JSON.stringify(direct.map((r) => r.detail))}`);
    expect(
      direct.some(
        (r) =>
          r.outcome === 'denied' &&
          r.detail.host === upstreamPod.status!.podIP &&
          r.detail.port === HTTP_PORT,
      ),
    ).toBe(true);
    expect(list.some((r) => r.kind === 'egress.rules')).toBe(true);
    expect((await gatewayCall('GET', `/v1/sessions/${name}/audit/verify${q}`)).json).toMatchObject({
      valid: true,
    });
    const pod = (
      await kube.core.listNamespacedPod({
        namespace: PLATFORM_NS,
        labelSelector: 'app.kubernetes.io/component=egress-proxy',
      })
    ).items[0]!;
    const file = `/var/lib/sandbox-audit/${ns}/${name}.jsonl`;
    const edit = await kubectl([
      'exec',
      '-n',
      PLATFORM_NS,
      pod.metadata!.name!,
      '--',
      '/usr/bin/node',
      '-e',
      `const fs=require('fs');const l=fs.readFileSync('${file}','utf8').split('\\n');` +
        `const i=l.findIndex((x)=>x.includes('"outcome":"denied"'));l[i]=l[i].replace('"outcome":"denied"','"outcome":"allowed"');` +
        `fs.writeFileSync('${file}',l.join('\\n'));console.log(JSON.parse(l[i]).seq)`,
    ]);
    expect(edit.status).toBe(0);
    const altered = Number(edit.stdout.trim());
    const verify = await gatewayCall('GET', `/v1/sessions/${name}/audit/verify${q}`);
    console.log(`verify after altering record ${altered}: ${JSON.stringify(verify.json)}`);
    expect(verify.json).toMatchObject({ valid: false, brokenAt: altered, reason: 'hash-mismatch' });
  });
});
