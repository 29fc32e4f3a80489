package rootfs

import (
	"fmt"
	"path"
)

// Stack is the merged view of the layers below the one being built. Layers are assembled
// independently (each recipe layer pulls in the shared-library closure it needs), so an upper
// layer usually repeats files a lower one already has, libc above all; Thin drops those so each
// file is stored once per image.
type Stack struct {
	merged map[string]*Entry
}

// NewStack returns an empty stack (the layer above it is the bottom layer).
func NewStack() *Stack {
	return &Stack{merged: map[string]*Entry{}}
}

// Thin returns the entries of upper that change the merged view, sorted by path: entries
// identical to the lower ones and implied directories that already exist below are dropped.
// Writing beneath a lower symlink is an error: the upper directory would replace the link.
func (s *Stack) Thin(upper *Tree) ([]*Entry, error) {
	var out []*Entry
	for _, e := range upper.Sorted() {
		if err := s.checkParents(e.Path); err != nil {
			return nil, err
		}
		low, ok := s.merged[e.Path]
		switch {
		case ok && low.Same(e):
			continue
		case ok && e.Implied && low.Kind == KindDir:
			continue
		case ok && e.Implied:
			return nil, fmt.Errorf("%s is a %s in a lower layer but a directory here", e.Path, low.Kind)
		}
		out = append(out, e)
	}
	return out, nil
}

// Push adds a thinned layer's entries on top of the merged view.
func (s *Stack) Push(entries []*Entry) {
	for _, e := range entries {
		s.merged[e.Path] = e
	}
}

func (s *Stack) checkParents(p string) error {
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if low, ok := s.merged[dir]; ok && low.Kind != KindDir {
			return fmt.Errorf("%s lies beneath %s, a %s in a lower layer", p, dir, low.Kind)
		}
	}
	return nil
}
