package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultLibDirs is where the dynamic loader of a Debian amd64 host looks for libraries when an
// ELF file has no RUNPATH (ld.so.conf.d/x86_64-linux-gnu.conf, then the built-in defaults).
var DefaultLibDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// maxLinks bounds symlink chains, as the kernel does (ELOOP after 40).
const maxLinks = 40

// Host copies paths of a host filesystem into a Tree under the same image paths. Symlinks are
// kept as symlinks and their targets copied too, so /lib -> usr/lib and libc.so.6 -> libc-2.36.so
// look in the image as they do on the host; every ELF file brings its shared-library closure.
type Host struct {
	// Root is the host filesystem root ("/" in production, a fixture directory in tests).
	Root string
	// LibDirs are searched (below Root) for DT_NEEDED libraries after RPATH/RUNPATH.
	LibDirs []string
	// Warn receives non-fatal findings (a dangling symlink) so the build log shows them.
	Warn func(msg string)

	tree *Tree
	// done maps a copied path to whether it was copied recursively: a directory first seen in a
	// package list (empty) must still be filled when a recipe later asks for the whole tree.
	done map[string]bool
	libs map[libKey]string
}

// NewHost returns a Host that adds to tree.
func NewHost(root string, tree *Tree) *Host {
	return &Host{
		Root: root, LibDirs: DefaultLibDirs, Warn: func(string) {},
		tree: tree, done: map[string]bool{}, libs: map[libKey]string{},
	}
}

// hostPath maps an image path to the host file that backs it.
func (h *Host) hostPath(p string) string {
	return filepath.Join(h.Root, filepath.FromSlash(p))
}

// AddOptions controls how Add copies a host path.
type AddOptions struct {
	// Recursive copies a directory's contents; otherwise a directory is added empty.
	Recursive bool
	// Skip drops image paths (nil keeps everything).
	Skip func(string) bool
	// AllowDangling keeps a symlink whose target is missing, with a warning, instead of failing:
	// packages and directory trees ship links into optional files, but a path a recipe names
	// explicitly must exist.
	AllowDangling bool
}

// Add copies host path p to the same image path.
func (h *Host) Add(p string, o AddOptions) error {
	real, err := h.canonical(p, 0)
	if err != nil {
		if o.AllowDangling && errors.Is(err, fs.ErrNotExist) {
			h.Warn(fmt.Sprintf("dangling symlink kept: %v", err))
			return nil
		}
		return err
	}
	if prev, ok := h.done[real]; (ok && (prev || !o.Recursive)) || real == "/" || (o.Skip != nil && o.Skip(real)) {
		return nil
	}
	h.done[real] = o.Recursive
	fi, err := os.Lstat(h.hostPath(real))
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return h.addDir(real, fi, o)
	case fi.Mode().IsRegular():
		return h.AddFile(real, h.hostPath(real), fileMode(fi))
	}
	return fmt.Errorf("%s: unsupported file type %s", real, fi.Mode().Type())
}

func (h *Host) addDir(real string, fi fs.FileInfo, o AddOptions) error {
	if err := h.tree.Add(Entry{Path: real, Kind: KindDir, Mode: fileMode(fi)}); err != nil {
		return err
	}
	if !o.Recursive {
		return nil
	}
	names, err := readDirNames(h.hostPath(real))
	if err != nil {
		return err
	}
	inner := o
	inner.AllowDangling = true
	for _, n := range names {
		if err := h.Add(path.Join(real, n), inner); err != nil {
			return err
		}
	}
	return nil
}

// AddFile adds a regular file at image path p with bytes from host file src, and the
// shared-library closure of src when it is a dynamically linked ELF file.
func (h *Host) AddFile(p, src string, mode uint32) error {
	if err := h.tree.Add(Entry{Path: p, Kind: KindFile, Mode: mode, Source: src}); err != nil {
		return err
	}
	return h.addELFDeps(src, path.Dir(p))
}

// canonical resolves every symlink in p the way the kernel would, recording each link it
// crosses as a symlink entry, and returns the link-free image path.
func (h *Host) canonical(p string, depth int) (string, error) {
	if depth > maxLinks {
		return "", fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	cur := "/"
	for _, part := range strings.Split(path.Clean("/"+p), "/") {
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		fi, err := os.Lstat(h.hostPath(next))
		if err != nil {
			return "", fmt.Errorf("host path %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if cur, err = h.followLink(next, depth); err != nil {
			return "", err
		}
	}
	return cur, nil
}

func (h *Host) followLink(link string, depth int) (string, error) {
	target, err := os.Readlink(h.hostPath(link))
	if err != nil {
		return "", err
	}
	if err := h.tree.Add(Entry{Path: link, Kind: KindSymlink, Mode: 0o777, Target: target}); err != nil {
		return "", err
	}
	abs := target
	if !path.IsAbs(target) {
		abs = path.Join(path.Dir(link), target)
	}
	return h.canonical(abs, depth+1)
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

// fileMode converts Go's FileMode to Unix permission bits including setuid/setgid/sticky.
func fileMode(fi fs.FileInfo) uint32 {
	m := uint32(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}
