//go:build tools

// Package tools pins rancher's local-path-provisioner (the dynamic provisioner and default
// StorageClass kind ships) as a dependency of this module, so build.sh can compile its main
// package from the Go module proxy; nothing here is ever built itself.
package tools

import _ "github.com/rancher/local-path-provisioner"
