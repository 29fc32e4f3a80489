//go:build tools

// Package tools pins KWOK (Kubernetes WithOut Kubelet, sigs.k8s.io/kwok, Apache-2.0) as a
// dependency of this module, so build.sh can compile its controller from the Go module proxy:
// the simulated nodes of `make bench-scale` (docs/localkube.md, "Simulated nodes"). Nothing here
// is built.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
