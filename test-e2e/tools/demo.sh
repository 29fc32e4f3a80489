#!/usr/bin/env bash
# The end of `make run`: with the platform installed (make platform-up), create the example
# SandboxSession, wait until it is Ready, run one command through the gateway, and print what a
# user needs next: kubectl, curl and an MCP client configuration.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOCALKUBE_DIR=${LOCALKUBE_DIR:-$PWD/.localkube}
KUBECONFIG=${PLATFORM_KUBECONFIG:-$LOCALKUBE_DIR/kubeconfig}
PLATFORM_NAMESPACE=${PLATFORM_NAMESPACE:-sandbox-system}
PLATFORM_RELEASE=${PLATFORM_RELEASE:-sandbox}
NS=${DEMO_NAMESPACE:-sandboxes}
NAME=${DEMO_SESSION:-demo}
KEY_FILE=$LOCALKUBE_DIR/platform/demo.key
kubectl=$LOCALKUBE_DIR/bin/kubectl
k() { "$kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

step() { printf '\n\033[1m>> %s\033[0m\n' "$*"; }

step "example SandboxSession $NS/$NAME (crds/examples/minimal.yaml)"
sed "s/^  name: .*/  name: $NAME/" crds/examples/minimal.yaml | k -n "$NS" apply -f -
step "waiting until it is Ready (the operator creates its Secret and Pod; the agent's probe passes)"
start=$(date +%s%N)
k -n "$NS" wait --for=condition=Ready "sandboxsession/$NAME" --timeout=180s
echo "Ready after $((($(date +%s%N) - start) / 1000000)) ms"
k -n "$NS" get sbs "$NAME"

svc=$PLATFORM_RELEASE-sandbox-platform-gateway
ip=$(k -n "$PLATFORM_NAMESPACE" get svc "$svc" -o jsonpath='{.spec.clusterIP}')
port=$(k -n "$PLATFORM_NAMESPACE" get svc "$svc" -o jsonpath='{.spec.ports[0].port}')
url="http://$ip:$port"
# /metrics has its own port and Service (gateway.metricsPort); the API port answers 404 for it.
metrics_ip=$(k -n "$PLATFORM_NAMESPACE" get svc "$svc-metrics" -o jsonpath='{.spec.clusterIP}')
metrics_port=$(k -n "$PLATFORM_NAMESPACE" get svc "$svc-metrics" -o jsonpath='{.spec.ports[0].port}')
key=$(cat "$KEY_FILE")

step "one command through the gateway ($url)"
body='{"command":"echo \"hello from $(uname -n)\"; id; pwd"}'
echo "POST $url/v1/sessions/$NAME/exec?namespace=$NS  $body"
resp=$(curl -sS --fail-with-body --max-time 60 -H "Authorization: Bearer $key" -H 'content-type: application/json' \
  -d "$body" "$url/v1/sessions/$NAME/exec?namespace=$NS")
node -e 'const r=JSON.parse(process.argv[1]);process.stdout.write(r.stdout);console.log(`exitCode=${r.exitCode} durationMs=${r.durationMs}`)' "$resp"

cat <<EOF

========================================================================================
 sandbox-platform is running on the local Kubernetes (no Docker). Next steps:

 kubectl (the cluster's own version):
   export KUBECONFIG=$KUBECONFIG
   alias kubectl=$kubectl
   kubectl get sbs -A                         # sessions: Ready, Reason, Pod IP, Last Activity, Expires
   kubectl -n $NS describe sbs $NAME          # conditions and events
   kubectl -n $NS apply -f crds/examples/custom-idle-timeout.yaml

 REST (API key of tenant "demo", namespace $NS, in $KEY_FILE):
   export SANDBOX_URL=$url SANDBOX_KEY=\$(cat $KEY_FILE)
   curl -s -H "Authorization: Bearer \$SANDBOX_KEY" -H 'content-type: application/json' \\
     -d '{"name":"mybox"}' "\$SANDBOX_URL/v1/sessions?namespace=$NS"
   curl -s -H "Authorization: Bearer \$SANDBOX_KEY" -H 'content-type: application/json' \\
     -d '{"command":"uname -a","waitSeconds":60}' "\$SANDBOX_URL/v1/sessions/mybox/exec?namespace=$NS"
   curl -s "\$SANDBOX_URL/openapi.json"        # the whole API; docs/gateway.md has a guide

 MCP (Streamable HTTP) client configuration:
   {
     "mcpServers": {
       "sandbox": {
         "type": "http",
         "url": "$url/mcp",
         "headers": { "Authorization": "Bearer $key" }
       }
     }
   }

 The official e2b SDKs (npm e2b, PyPI e2b), unchanged (docs/e2b.md):
   export E2B_API_URL=$url/e2b
   export E2B_SANDBOX_URL=$url/e2b/envd
   export E2B_API_KEY=\$(cat $KEY_FILE)
   node -e "import('e2b').then(async ({Sandbox}) => { const s = await Sandbox.create(); console.log((await s.commands.run('echo hi')).stdout); await s.kill() })"

 Metrics: curl http://$metrics_ip:$metrics_port/metrics    Stop: make cluster-down    Remove the platform: make platform-down
========================================================================================
EOF
