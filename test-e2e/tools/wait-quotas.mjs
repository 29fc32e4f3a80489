// Waits until the quota controller has counted every ResourceQuota of a release: until then the API
// server refuses creates of what a quota names ("status unknown for quota"), so a session created
// right after `helm install` got 403 (the first e2e spec of a fresh cluster). Polls `kubectl get
// resourcequota -A -o json` every second, up to 180 s; usage: wait-quotas.mjs <kubectl> [more args of
// that get: --kubeconfig, -l selector].
import { execFileSync } from 'node:child_process';

const [kubectl, ...args] = process.argv.slice(2);
if (!kubectl) throw new Error('usage: wait-quotas.mjs <kubectl> [args...]');
const deadline = Date.now() + 180_000;
for (;;) {
  const list = JSON.parse(
    execFileSync(kubectl, ['get', 'resourcequota', '-A', '-o', 'json', ...args], { encoding: 'utf8' }),
  );
  // Quota admission refuses while a resource of status.hard has no status.used entry; a count of
  // a custom resource gets one only once the quota monitor discovered the CRD (up to ~30 s).
  const counted = (q) => {
    const hard = q.status?.hard ?? {};
    const used = q.status?.used ?? {};
    return Object.keys(q.spec?.hard ?? {}).every((k) => k in hard && k in used);
  };
  const pending = list.items
    .filter((q) => !counted(q))
    .map((q) => `${q.metadata.namespace}/${q.metadata.name}`);
  if (pending.length === 0) break;
  if (Date.now() > deadline) {
    console.error(`ResourceQuotas not counted after 180 s: ${pending.join(', ')}`);
    process.exit(1);
  }
  console.log(`   waiting for the quota controller to count ${pending.join(', ')}`);
  await new Promise((r) => setTimeout(r, 1000));
}
