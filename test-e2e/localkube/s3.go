package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The local object store of SandboxSnapshots (docs/snapshots.md): versitygw, Versity's S3 gateway
// (Apache-2.0; addons/versitygw, built from its Go module), serving a posix directory under the
// state dir on the node address, where the operator's Pods reach it and nothing outside the host
// does. It is a supervised component like kube-router, started with `--s3=PATH` and stopped with
// the cluster; restartable (restart.go), since its data is on disk. Its root credentials are
// generated once into s3/access-key-id and s3/secret-access-key (0600) and reach versitygw through
// its environment only (a shell wrapper reads the files), never a command line.
const (
	objectStoreComponent = "versitygw"
	objectStorePort      = 7480
	objectStoreRegion    = "us-east-1"
	objectStoreAccessKey = "localkube"
)

func (l layout) s3Dir() string        { return l.path("s3") }
func (l layout) s3DataDir() string    { return l.path("s3", "data") }
func (l layout) s3AccessFile() string { return l.path("s3", "access-key-id") }
func (l layout) s3SecretFile() string { return l.path("s3", "secret-access-key") }

// s3EndpointFile holds the store's URL for make platform-up and the e2e specs.
func (l layout) s3EndpointFile() string { return l.path("s3", "endpoint") }

// objectStoreAddress is where versitygw listens: the node address (pods route to it).
func objectStoreAddress() string {
	return net.JoinHostPort(nodeIP, strconv.Itoa(objectStorePort))
}

// wrapperScript starts versitygw with the credentials from their files in its environment.
const objectStoreWrapper = `ROOT_ACCESS_KEY_ID="$(cat "$1")" ROOT_SECRET_ACCESS_KEY="$(cat "$2")" exec "$3" --port "$4" --region "$5" --quiet posix "$6"`

// startObjectStore starts versitygw and waits until it answers HTTP.
func (c *cluster) startObjectStore(ctx context.Context, l layout, bin string) error {
	if err := os.MkdirAll(l.s3DataDir(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", l.s3DataDir(), err)
	}
	if err := ensureObjectStoreCredentials(l); err != nil {
		return err
	}
	if err := checkPortsFree([]portUse{{objectStorePort, objectStoreComponent}}); err != nil {
		return err
	}
	if _, err := c.start(objectStoreComponent, "/bin/sh", "-c", objectStoreWrapper, objectStoreComponent,
		l.s3AccessFile(), l.s3SecretFile(), bin, objectStoreAddress(), objectStoreRegion, l.s3DataDir()); err != nil {
		return err
	}
	endpoint := "http://" + objectStoreAddress()
	if err := writeFileAtomic(l.s3EndpointFile(), []byte(endpoint+"\n"), 0o644); err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	return waitUntil(ctx, "S3 object store (versitygw) on "+endpoint, c.children, func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/", nil)
		if err != nil {
			return false, err.Error()
		}
		res, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_ = res.Body.Close()
		// Any S3 answer (403 for an unsigned request) means it serves.
		return true, ""
	})
}

// ensureObjectStoreCredentials writes the root credentials once (kept across restarts).
func ensureObjectStoreCredentials(l layout) error {
	if _, err := os.Stat(l.s3SecretFile()); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", l.s3SecretFile(), err)
	}
	secret := make([]byte, 20)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("generate the object store secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(l.s3SecretFile()), 0o700); err != nil {
		return err
	}
	if err := writeFileAtomic(l.s3AccessFile(), []byte(objectStoreAccessKey), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(l.s3SecretFile(), []byte(hex.EncodeToString(secret)), 0o600)
}
