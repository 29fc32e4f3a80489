// Package rootfs assembles the file tree of one image layer: explicit entries from a recipe,
// host paths with their symlinks and shared-library closure, and files of Debian packages.
package rootfs

import (
	"bytes"
	"fmt"
	"path"
	"sort"
)

// Kind is the type of a tree entry.
type Kind int

// The entry kinds a layer can hold. Devices, FIFOs and sockets are never needed in an image:
// the runtime provides /dev.
const (
	KindDir Kind = iota
	KindFile
	KindSymlink
)

func (k Kind) String() string {
	return [...]string{"dir", "file", "symlink"}[k]
}

// Entry is one file, directory or symlink at an absolute, clean image path.
type Entry struct {
	Path string
	Kind Kind
	// Mode holds the permission bits plus setuid (04000), setgid (02000) and sticky (01000).
	Mode     uint32
	UID, GID int
	// Target is the link text of a symlink, kept verbatim.
	Target string
	// Source is the host file a regular file's bytes come from, when Content is nil.
	Source  string
	Content []byte
	// Implied marks a directory that exists only to hold other entries (mode 0755, root).
	Implied bool
}

// Same reports whether two entries would produce the same bytes in a layer.
func (e *Entry) Same(o *Entry) bool {
	return e.Kind == o.Kind && e.Mode == o.Mode && e.UID == o.UID && e.GID == o.GID &&
		e.Target == o.Target && e.Source == o.Source && bytes.Equal(e.Content, o.Content)
}

// Tree is a set of entries keyed by image path. Adding an entry adds its missing parents as
// implied directories.
type Tree struct {
	entries map[string]*Entry
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{entries: map[string]*Entry{}}
}

// Get returns the entry at p.
func (t *Tree) Get(p string) (*Entry, bool) {
	e, ok := t.entries[p]
	return e, ok
}

// Len is the number of entries, implied directories included.
func (t *Tree) Len() int {
	return len(t.entries)
}

// Sorted returns the entries ordered by path, so parents come before children and the layer
// bytes do not depend on the order entries were added in.
func (t *Tree) Sorted() []*Entry {
	out := make([]*Entry, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Add inserts e. Adding an identical entry twice is a no-op; an explicit directory replaces an
// implied one; any other collision is an error, because silently picking one of two different
// files for the same path makes an image depend on recipe order.
func (t *Tree) Add(e Entry) error {
	if !path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || e.Path == "/" {
		return fmt.Errorf("image path %q must be absolute, clean and not /", e.Path)
	}
	if err := t.addParents(path.Dir(e.Path)); err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	old, ok := t.entries[e.Path]
	switch {
	case !ok:
		t.entries[e.Path] = &e
		return nil
	case old.Same(&e) && !e.Implied:
		old.Implied = false
		return nil
	case old.Same(&e):
		return nil
	case old.Implied && e.Kind == KindDir:
		t.entries[e.Path] = &e
		return nil
	case e.Implied && old.Kind == KindDir:
		return nil
	}
	return fmt.Errorf("conflicting entries for %s: %s vs %s", e.Path, describe(old), describe(&e))
}

func (t *Tree) addParents(dir string) error {
	if dir == "/" {
		return nil
	}
	if old, ok := t.entries[dir]; ok {
		if old.Kind != KindDir {
			return fmt.Errorf("parent %s is a %s, not a directory", dir, old.Kind)
		}
		return nil
	}
	if err := t.addParents(path.Dir(dir)); err != nil {
		return err
	}
	t.entries[dir] = &Entry{Path: dir, Kind: KindDir, Mode: 0o755, Implied: true}
	return nil
}

func describe(e *Entry) string {
	switch {
	case e.Kind == KindSymlink:
		return fmt.Sprintf("symlink -> %s", e.Target)
	case e.Kind == KindDir:
		return fmt.Sprintf("dir %04o %d:%d", e.Mode, e.UID, e.GID)
	case e.Content != nil:
		return fmt.Sprintf("file %04o %d:%d (%d inline bytes)", e.Mode, e.UID, e.GID, len(e.Content))
	}
	return fmt.Sprintf("file %04o %d:%d from %s", e.Mode, e.UID, e.GID, e.Source)
}
