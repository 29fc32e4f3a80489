package oci

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Summary names the image in an archive: what import scripts compare with containerd.
type Summary struct {
	Ref string
	// Digest is the manifest digest, the image's identity in containerd.
	Digest string
	// ArchiveSize is the size of the tarball in bytes.
	ArchiveSize int64
}

// ReadFile returns the contents of the member called name in an archive.
func ReadFile(archive, name string) ([]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no member %s", archive, name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if hdr.Name == name {
			return io.ReadAll(tr)
		}
	}
}

// ReadBlob returns the blob with the given digest from an archive.
func ReadBlob(archive, digest string) ([]byte, error) {
	if len(digest) <= len("sha256:") {
		return nil, fmt.Errorf("bad digest %q", digest)
	}
	return ReadFile(archive, "blobs/sha256/"+digest[len("sha256:"):])
}

// ReadJSON decodes the blob with the given digest from an archive into v.
func ReadJSON(archive, digest string, v any) error {
	data, err := ReadBlob(archive, digest)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Summarize reads the index of an archive written by WriteArchive (one image).
func Summarize(archive string) (Summary, error) {
	data, err := ReadFile(archive, "index.json")
	if err != nil {
		return Summary{}, err
	}
	var idx Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return Summary{}, fmt.Errorf("%s: index.json: %w", archive, err)
	}
	if len(idx.Manifests) != 1 {
		return Summary{}, fmt.Errorf("%s: expected one image, index lists %d", archive, len(idx.Manifests))
	}
	fi, err := os.Stat(archive)
	if err != nil {
		return Summary{}, err
	}
	m := idx.Manifests[0]
	ref := m.Annotations[AnnotationContainerdName]
	if ref == "" {
		return Summary{}, fmt.Errorf("%s: the image has no %s annotation", archive, AnnotationContainerdName)
	}
	return Summary{Ref: ref, Digest: m.Digest, ArchiveSize: fi.Size()}, nil
}
