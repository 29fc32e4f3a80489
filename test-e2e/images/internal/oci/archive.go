package oci

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Blob is one blob to put into an archive: inline bytes or a file.
type Blob struct {
	Digest string
	Data   []byte
	Path   string
	Size   int64
}

// JSONBlob marshals v and returns it as a blob with its descriptor fields filled in.
func JSONBlob(v any) (Blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Blob{}, err
	}
	sum := sha256.Sum256(data)
	return Blob{Digest: "sha256:" + hex.EncodeToString(sum[:]), Data: data, Size: int64(len(data))}, nil
}

// WriteArchive writes an oci-archive tarball to path (via a temp file and rename): oci-layout,
// index.json and the blobs, in a fixed order with fixed mtimes so the tarball is reproducible.
func WriteArchive(path string, index Index, blobs []Blob, mtime time.Time) error {
	indexBlob, err := JSONBlob(index)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	tw := tar.NewWriter(tmp)
	sorted := append([]Blob(nil), blobs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Digest < sorted[j].Digest })
	if err := writeLayoutFiles(tw, indexBlob.Data, mtime); err != nil {
		return err
	}
	for i, b := range sorted {
		if i > 0 && b.Digest == sorted[i-1].Digest {
			continue // two layers with the same bytes are stored once
		}
		if err := writeBlob(tw, b, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func writeLayoutFiles(tw *tar.Writer, index []byte, mtime time.Time) error {
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, f.data, mtime); err != nil {
			return err
		}
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func writeBlob(tw *tar.Writer, b Blob, mtime time.Time) error {
	name := "blobs/sha256/" + b.Digest[len("sha256:"):]
	if b.Path == "" {
		return writeFile(tw, name, b.Data, mtime)
	}
	f, err := os.Open(b.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: b.Size, ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, b.Size); err != nil {
		return fmt.Errorf("blob %s: %w", b.Digest, err)
	}
	return nil
}
