package layer

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/rootfs"
)

// formatVersion is mixed into every fingerprint; bump it when the tar or gzip output changes
// for the same inputs, so stale cache entries are not reused.
const formatVersion = "imgbuild-layer-v1"

// Blob describes a gzip-compressed layer in the cache.
type Blob struct {
	// DiffID is the digest of the uncompressed tar (the image config's rootfs.diff_ids).
	DiffID string `json:"diffID"`
	// Digest and Size describe the compressed blob (the manifest's layer descriptor).
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Cache stores compressed layers by digest under Dir/blobs/sha256 and remembers which input
// fingerprint produced which blob under Dir/fingerprints.
type Cache struct {
	Dir string
	// Level is the gzip level (compress/gzip constants).
	Level int
}

// BlobPath is where the blob with the given digest ("sha256:<hex>") is stored.
func (c *Cache) BlobPath(digest string) string {
	return filepath.Join(c.Dir, "blobs", "sha256", digest[len("sha256:"):])
}

// Layer returns the blob for entries, building it only when no blob with the same input
// fingerprint is cached. cached reports whether the build was skipped.
func (c *Cache) Layer(entries []*rootfs.Entry, mtime time.Time) (b Blob, cached bool, err error) {
	fp, err := c.fingerprint(entries, mtime)
	if err != nil {
		return Blob{}, false, err
	}
	index := filepath.Join(c.Dir, "fingerprints", fp+".json")
	if b, ok := c.lookup(index); ok {
		return b, true, nil
	}
	b, err = c.build(entries, mtime)
	if err != nil {
		return Blob{}, false, err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return Blob{}, false, err
	}
	return b, false, writeAtomic(index, data)
}

// lookup returns the cached blob for an index file whose blob is still present. A missing or
// unreadable index is a cache miss, never an error: the cache can always be rebuilt.
func (c *Cache) lookup(index string) (Blob, bool) {
	data, err := os.ReadFile(index)
	if err != nil {
		return Blob{}, false
	}
	var b Blob
	if json.Unmarshal(data, &b) != nil || len(b.Digest) <= len("sha256:") {
		return Blob{}, false
	}
	fi, err := os.Stat(c.BlobPath(b.Digest))
	if err != nil || fi.Size() != b.Size {
		return Blob{}, false
	}
	return b, true
}

func (c *Cache) build(entries []*rootfs.Entry, mtime time.Time) (Blob, error) {
	tmpDir := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return Blob{}, err
	}
	tmp, err := os.CreateTemp(tmpDir, "layer-*")
	if err != nil {
		return Blob{}, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	blobHash, diffHash := sha256.New(), sha256.New()
	counter := &countingWriter{w: io.MultiWriter(tmp, blobHash)}
	gz, err := gzip.NewWriterLevel(counter, c.Level)
	if err != nil {
		return Blob{}, err
	}
	if err := WriteTar(io.MultiWriter(gz, diffHash), entries, mtime); err != nil {
		return Blob{}, err
	}
	if err := gz.Close(); err != nil {
		return Blob{}, err
	}
	if err := tmp.Close(); err != nil {
		return Blob{}, err
	}
	b := Blob{DiffID: digestOf(diffHash), Digest: digestOf(blobHash), Size: counter.n}
	if err := os.MkdirAll(filepath.Dir(c.BlobPath(b.Digest)), 0o755); err != nil {
		return Blob{}, err
	}
	return b, os.Rename(tmp.Name(), c.BlobPath(b.Digest))
}

// fingerprint hashes everything the layer bytes depend on without reading file contents: entry
// metadata, inline contents, and for host files their path, size, mtime, ctime and inode. It is
// the same trade-off make takes with timestamps, and it lets an unchanged 100 MB node binary be
// skipped without hashing it.
func (c *Cache) fingerprint(entries []*rootfs.Entry, mtime time.Time) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00level=%d\x00mtime=%d\n", formatVersion, c.Level, mtime.Unix())
	for _, e := range entries {
		fmt.Fprintf(h, "%d\x00%s\x00%o\x00%d\x00%d\x00%s\x00", e.Kind, e.Path, e.Mode, e.UID, e.GID, e.Target)
		switch {
		case e.Content != nil:
			sum := sha256.Sum256(e.Content)
			fmt.Fprintf(h, "content=%x\n", sum)
		case e.Source != "":
			fi, err := os.Stat(e.Source)
			if err != nil {
				return "", err
			}
			st, _ := fi.Sys().(*syscall.Stat_t)
			if st == nil {
				return "", fmt.Errorf("%s: no stat information", e.Source)
			}
			fmt.Fprintf(h, "source=%s\x00%d\x00%d\x00%d.%d\x00%d\x00%d\n", e.Source, fi.Size(),
				fi.ModTime().UnixNano(), st.Ctim.Sec, st.Ctim.Nsec, st.Dev, st.Ino)
		default:
			fmt.Fprint(h, "\n")
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func digestOf(h hash.Hash) string {
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeAtomic writes data to a temp file next to path and renames it, so a concurrent build
// sees either the old file or the new one, never a torn one.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
