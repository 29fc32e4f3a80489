package layer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/rootfs"
)

var epoch = time.Unix(0, 0).UTC()

func entries(t *testing.T, src string) []*rootfs.Entry {
	t.Helper()
	tr := rootfs.NewTree()
	for _, e := range []rootfs.Entry{
		{Path: "/tmp", Kind: rootfs.KindDir, Mode: 0o1777},
		{Path: "/usr/bin/tool", Kind: rootfs.KindFile, Mode: 0o755, Source: src},
		{Path: "/etc/passwd", Kind: rootfs.KindFile, Mode: 0o644, Content: []byte("root:x:0:0::/:/bin/sh\n")},
		{Path: "/bin", Kind: rootfs.KindSymlink, Mode: 0o777, Target: "usr/bin"},
		{Path: "/workspace", Kind: rootfs.KindDir, Mode: 0o755, UID: 1000, GID: 1000},
	} {
		if err := tr.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	return tr.Sorted()
}

func source(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteTarIsReproducibleAndExact(t *testing.T) {
	src := source(t, "#!/bin/sh\necho tool\n")
	var a, b bytes.Buffer
	if err := WriteTar(&a, entries(t, src), epoch); err != nil {
		t.Fatal(err)
	}
	// A later mtime on the host file must not leak into the layer.
	if err := os.Chtimes(src, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := WriteTar(&b, entries(t, src), epoch); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same entries differ")
	}
	type hdr struct {
		typ          byte
		mode         int64
		uid, gid     int
		link, body   string
		mtime        int64
		uname, gname string
	}
	got := map[string]hdr{}
	var order []string
	r := tar.NewReader(&a)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, h.Name)
		got[h.Name] = hdr{h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, string(body), h.ModTime.Unix(), h.Uname, h.Gname}
	}
	wantOrder := []string{"bin", "etc/", "etc/passwd", "tmp/", "usr/", "usr/bin/", "usr/bin/tool", "workspace/"}
	if len(order) != len(wantOrder) {
		t.Fatalf("members = %v, want %v", order, wantOrder)
	}
	for i := range order {
		if order[i] != wantOrder[i] {
			t.Fatalf("members = %v, want %v", order, wantOrder)
		}
	}
	checks := map[string]hdr{
		"bin":          {typ: tar.TypeSymlink, mode: 0o777, link: "usr/bin"},
		"tmp/":         {typ: tar.TypeDir, mode: 0o1777},
		"usr/bin/tool": {typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\necho tool\n"},
		"workspace/":   {typ: tar.TypeDir, mode: 0o755, uid: 1000, gid: 1000},
		"etc/passwd":   {typ: tar.TypeReg, mode: 0o644, body: "root:x:0:0::/:/bin/sh\n"},
	}
	for name, want := range checks {
		if got[name] != want {
			t.Errorf("%s = %+v, want %+v", name, got[name], want)
		}
	}
}

func TestCacheSkipsUnchangedInputsAndRebuildsChanged(t *testing.T) {
	src := source(t, "v1")
	c := &Cache{Dir: t.TempDir(), Level: gzip.BestSpeed}
	b1, cached, err := c.Layer(entries(t, src), epoch)
	if err != nil || cached {
		t.Fatalf("first build: cached=%v err=%v", cached, err)
	}
	checkBlob(t, c, b1)
	b2, cached, err := c.Layer(entries(t, src), epoch)
	if err != nil || !cached || b2 != b1 {
		t.Fatalf("second build: cached=%v err=%v blob %+v vs %+v", cached, err, b2, b1)
	}
	// Same bytes, new mtime: the fingerprint misses, the rebuilt blob is identical.
	if err := os.Chtimes(src, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	b3, cached, err := c.Layer(entries(t, src), epoch)
	if err != nil || cached || b3 != b1 {
		t.Fatalf("touched input: cached=%v err=%v blob %+v, want a rebuild to %+v", cached, err, b3, b1)
	}
	if err := os.WriteFile(src, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	b4, _, err := c.Layer(entries(t, src), epoch)
	if err != nil || b4.DiffID == b1.DiffID || b4.Digest == b1.Digest {
		t.Fatalf("changed input: err=%v blob %+v, want new digests", err, b4)
	}
	checkBlob(t, c, b4)
}

// checkBlob verifies the stored blob against its descriptor: digest and size of the compressed
// bytes, and the diffID of the uncompressed tar.
func checkBlob(t *testing.T, c *Cache, b Blob) {
	t.Helper()
	data, err := os.ReadFile(c.BlobPath(b.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != b.Digest || int64(len(data)) != b.Size {
		t.Fatalf("blob does not match its digest/size")
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != b.DiffID {
		t.Fatalf("uncompressed tar does not match the diffID")
	}
}
