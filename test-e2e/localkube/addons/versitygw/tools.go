//go:build tools

// Package tools pins versitygw (Versity's S3 gateway, Apache-2.0) as a dependency of this
// module, so build.sh can compile its main package from the Go module proxy: the local cluster's
// S3-compatible object store for SandboxSnapshots (docs/snapshots.md). Nothing here is built.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
