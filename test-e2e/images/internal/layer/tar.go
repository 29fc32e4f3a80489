// Package layer writes image layers: a reproducible tar of a rootfs tree, gzip-compressed and
// stored in a content-addressed cache keyed by a fingerprint of its inputs.
package layer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/rootfs"
)

// WriteTar writes entries (already sorted by path) as a tar stream. Everything that would make
// two builds of the same files differ is fixed: mtimes are mtime, owner names are empty, there
// are no access/change times, and the order is the order given.
func WriteTar(w io.Writer, entries []*rootfs.Entry, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeEntry(tw, e, mtime); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e *rootfs.Entry, mtime time.Time) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(e.Path, "/"),
		Mode:    int64(e.Mode),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: mtime,
		Format:  tar.FormatPAX,
	}
	switch e.Kind {
	case rootfs.KindDir:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		return tw.WriteHeader(hdr)
	case rootfs.KindSymlink:
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = e.Target
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	if e.Content != nil {
		hdr.Size = int64(len(e.Content))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := io.Copy(tw, bytes.NewReader(e.Content))
		return err
	}
	return writeSource(tw, hdr, e.Source)
}

// writeSource copies a host file, failing if it changes size while being read: a layer must
// hold one consistent version of every file.
func writeSource(tw *tar.Writer, hdr *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	n, err := f.Read(make([]byte, 1))
	if n != 0 {
		return fmt.Errorf("%s grew while it was being read", src)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
