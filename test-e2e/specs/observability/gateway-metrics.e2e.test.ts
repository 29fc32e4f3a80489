/**
 * e2e: the gateway's /metrics is on its own port, through its own ClusterIP Service
 * (<release>-sandbox-platform-gateway-metrics, gateway.metricsPort), not on the API: the metrics
 * Service answers the gateway's series (the probes' requests are already counted) and the process
 * metrics; the API Service answers /metrics with a 404 problem naming the metrics port, and does
 * not carry the metrics port.
 *
 * Scraped from the test host (the node), which NetworkPolicies do not restrict; which pods may
 * scrape is networkPolicy.gateway.metricsFrom (rendered-chart checks in test-e2e/tools). Needs the
 * chart installed and platform.env (E2E_GATEWAY_URL).
 */
import { expect, it } from '@jest/globals';

import { kubeClients, predicate, waitFor } from '../../src/framework/index.js';
import { describeOnLocal } from '../../src/framework/not-run.js';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';

describeOnLocal('gateway /metrics on its own port', () => {
  const kube = kubeClients();
  const baseUrl = process.env.E2E_GATEWAY_URL ?? '';
  const gateway = `${RELEASE}-sandbox-platform-gateway`;

  it('the metrics Service serves the gateway series; the API Service does not', async () => {
    const metrics = await kube.core.readNamespacedService({
      name: `${gateway}-metrics`,
      namespace: PLATFORM_NS,
    });
    expect(metrics.spec?.type).toBe('ClusterIP');
    const port = metrics.spec?.ports?.find((p) => p.name === 'metrics');
    expect(port?.port).toBe(9090);
    const api = await kube.core.readNamespacedService({ name: gateway, namespace: PLATFORM_NS });
    expect(api.spec?.ports?.map((p) => p.name)).toEqual(['http']);

    const url = `http://${metrics.spec!.clusterIP}:${port!.port}/metrics`;
    const body = await waitFor(
      () => fetch(url).then((r) => (r.status === 200 ? r.text() : '')),
      predicate('gateway series on the metrics port', (text: string) =>
        text.includes('sandbox_gateway_http_request_duration_seconds_count{'),
      ),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(body).toContain('route="/readyz"');
    expect(body).toMatch(/^process_cpu_seconds_total /m);

    const refused = await fetch(`${baseUrl}/metrics`);
    expect(refused.status).toBe(404);
    const problem = (await refused.json()) as { type: string; detail: string };
    expect(problem.type).toMatch(/\/not-found$/);
    expect(problem.detail).toContain('9090');
  });
});
