{{/*
Scripts of the test Pods (node ES modules, run with `node --input-type=module -e`). Shared part:
logging, a retry loop bounded by the Pod's deadline, GET through the API server with the Pod's
ServiceAccount token, and calls to the gateway's Service.
*/}}
{{- define "sandbox-platform.testScriptCommon" -}}
import { readFileSync } from 'node:fs';
const started = Date.now();
const budgetMs = Number(process.env.DEADLINE_SECONDS) * 1000 - 10000;
const log = (line) => console.log(`${((Date.now() - started) / 1000).toFixed(1)}s ${line}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Runs check() until it returns a description (pass) or the Pod's budget is spent (fail). */
async function eventually(what, check) {
  let last = 'not tried';
  while (Date.now() - started < budgetMs) {
    try {
      const ok = await check();
      log(`ok   - ${what}: ${ok}`);
      return;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(2000);
  }
  throw new Error(`${what}: ${last}`);
}
const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
const api = `https://${host.includes(':') ? `[${host}]` : host}:${process.env.KUBERNETES_SERVICE_PORT}`;
async function kubeGet(path) {
  const token = readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/token', 'utf8').trim();
  const res = await fetch(api + path, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}
async function gateway(method, path, body, apiKey) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const res = await fetch(process.env.GATEWAY_URL + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(150000),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}
function fail(err) {
  log(`FAIL - ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
{{- end -}}

{{/* Operator and gateway readiness. */}}
{{- define "sandbox-platform.testScriptReadiness" -}}
{{ include "sandbox-platform.testScriptCommon" . }}
const ns = process.env.RELEASE_NAMESPACE;
async function deploymentReady(name) {
  const d = await kubeGet(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
  const want = d.spec.replicas ?? 1;
  const s = d.status ?? {};
  if ((s.observedGeneration ?? 0) < d.metadata.generation) throw new Error(`${name}: generation ${d.metadata.generation} not observed yet`);
  if ((s.updatedReplicas ?? 0) !== want || (s.readyReplicas ?? 0) !== want)
    throw new Error(`${name}: ${s.readyReplicas ?? 0}/${want} ready, ${s.updatedReplicas ?? 0}/${want} updated`);
  return `${s.readyReplicas}/${want} replicas ready and updated`;
}
try {
  await eventually(`operator Deployment ${process.env.OPERATOR} ready`, () => deploymentReady(process.env.OPERATOR));
  await eventually(`operator leader Lease ${process.env.OPERATOR} held and renewed`, async () => {
    const l = await kubeGet(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${process.env.OPERATOR}`);
    const holder = l.spec?.holderIdentity;
    if (!holder) throw new Error('no holder');
    const ageS = (Date.now() - Date.parse(l.spec.renewTime)) / 1000;
    const maxS = Math.max(60, 4 * (l.spec.leaseDurationSeconds ?? 15));
    if (!(ageS <= maxS)) throw new Error(`holder ${holder} last renewed ${ageS.toFixed(0)} s ago (more than ${maxS} s)`);
    return `holder ${holder}, renewed ${Math.max(0, ageS).toFixed(0)} s ago`;
  });
  await eventually(`gateway Deployment ${process.env.GATEWAY} ready`, () => deploymentReady(process.env.GATEWAY));
  for (const path of ['/healthz', '/readyz']) {
    await eventually(`gateway Service answers ${path}`, async () => {
      const r = await gateway('GET', path);
      if (r.status !== 200) throw new Error(`HTTP ${r.status} ${r.text.slice(0, 200)}`);
      return `HTTP 200 ${r.text.slice(0, 100)}`;
    });
  }
  const doc = await gateway('GET', '/openapi.json');
  log(`info - the gateway reports version ${doc.status === 200 ? doc.json().info?.version : `? (HTTP ${doc.status})`}; the chart's appVersion is ${process.env.APP_VERSION}`);
} catch (err) {
  fail(err);
}
{{- end -}}

{{/* One exec in a throwaway session through the gateway, deleted afterwards. */}}
{{- define "sandbox-platform.testScriptExec" -}}
{{ include "sandbox-platform.testScriptCommon" . }}
const key = (process.env.API_KEY ?? '').trim();
const ns = process.env.SESSION_NAMESPACE;
const name = `helm-test-${Math.random().toString(16).slice(2, 10)}`;
const q = `?namespace=${encodeURIComponent(ns)}`;
let created = false;
try {
  if (!key) throw new Error('the API key Secret is empty');
  const c = await gateway('POST', '/v1/sessions', { name, namespace: ns, idleTimeoutSeconds: 300 }, key);
  if (c.status !== 200 && c.status !== 201) throw new Error(`create ${ns}/${name}: HTTP ${c.status} ${c.text.slice(0, 300)}`);
  created = true;
  log(`ok   - created session ${ns}/${name} (HTTP ${c.status})`);
  const e = await gateway('POST', `/v1/sessions/${name}/exec${q}`, { command: 'echo helm-test-$((6 * 7))', waitSeconds: 120 }, key);
  if (e.status !== 200) throw new Error(`exec: HTTP ${e.status} ${e.text.slice(0, 300)}`);
  const r = e.json();
  if (r.exitCode !== 0 || r.stdout !== 'helm-test-42\n') throw new Error(`exec: exit ${r.exitCode}, stdout ${JSON.stringify(r.stdout)}, stderr ${JSON.stringify(r.stderr)}`);
  log(`ok   - exec in ${ns}/${name}: exit 0, stdout ${JSON.stringify(r.stdout)}`);
} catch (err) {
  log(`FAIL - ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  if (created) {
    const d = await gateway('DELETE', `/v1/sessions/${name}${q}`, undefined, key).catch((err) => ({ status: 0, text: String(err) }));
    if (d.status >= 200 && d.status < 300) log(`ok   - deleted session ${ns}/${name} (HTTP ${d.status})`);
    else {
      log(`FAIL - delete ${ns}/${name}: HTTP ${d.status} ${d.text.slice(0, 300)} (idle collection removes it after 300 s)`);
      process.exitCode = 1;
    }
  }
}
{{- end -}}
