package rootfs

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxsession/platform/test-e2e/images/internal/recipe"
)

// Assemble builds the tree of one recipe layer. Host paths and package files are read below
// root ("/" in production).
func Assemble(l recipe.Layer, root string, warn func(string)) (*Tree, error) {
	tree := NewTree()
	h := NewHost(root, tree)
	h.Warn = warn
	for i := range l.Entries {
		if err := addEntry(h, tree, &l.Entries[i]); err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Name, err)
		}
	}
	return tree, nil
}

func addEntry(h *Host, tree *Tree, e *recipe.Entry) error {
	switch {
	case e.Dir != "":
		mode, err := e.ParseMode(0o755)
		if err != nil {
			return err
		}
		return tree.Add(Entry{Path: e.Dir, Kind: KindDir, Mode: mode, UID: e.UID, GID: e.GID})
	case e.Symlink != "":
		return tree.Add(Entry{Path: e.Symlink, Kind: KindSymlink, Mode: 0o777, Target: e.Target, UID: e.UID, GID: e.GID})
	case e.File != "" && e.Content != nil:
		mode, err := e.ParseMode(0o644)
		if err != nil {
			return err
		}
		return tree.Add(Entry{Path: e.File, Kind: KindFile, Mode: mode, UID: e.UID, GID: e.GID, Content: []byte(*e.Content)})
	case e.File != "":
		return addSourceFile(h, tree, e)
	case len(e.Host) > 0:
		return addHostPaths(h, e)
	}
	return addPackages(h, e)
}

// addSourceFile copies a build output (a bundle, a helper binary) to an image path; its ELF
// closure, if any, comes from the host.
func addSourceFile(h *Host, tree *Tree, e *recipe.Entry) error {
	fi, err := os.Stat(e.Source)
	if err != nil {
		return fmt.Errorf("input for %s: %w", e.File, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("input for %s: %s is not a regular file", e.File, e.Source)
	}
	mode, err := e.ParseMode(fileMode(fi))
	if err != nil {
		return err
	}
	if err := tree.Add(Entry{Path: e.File, Kind: KindFile, Mode: mode, UID: e.UID, GID: e.GID, Source: e.Source}); err != nil {
		return err
	}
	return h.addELFDeps(e.Source, filepath.Dir(e.File))
}

func addHostPaths(h *Host, e *recipe.Entry) error {
	skip := Excluder(e.Exclude)
	for _, pattern := range e.Host {
		matches, err := filepath.Glob(h.hostPath(pattern))
		if err != nil {
			return err
		}
		if len(matches) == 0 {
			return fmt.Errorf("host path %s: no such file", pattern)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(h.Root, m)
			if err != nil {
				return err
			}
			if err := h.Add("/"+filepath.ToSlash(rel), AddOptions{Recursive: true, Skip: skip}); err != nil {
				return err
			}
		}
	}
	return nil
}

func addPackages(h *Host, e *recipe.Entry) error {
	skip := Excluder(append(append([]string{}, DocExcludes...), e.Exclude...))
	for _, pkg := range e.Packages {
		files, err := h.PackageFiles(pkg)
		if err != nil {
			return err
		}
		for _, p := range files {
			if skip(p) {
				continue
			}
			if err := h.Add(p, AddOptions{Skip: skip, AllowDangling: true}); err != nil {
				return fmt.Errorf("package %s: %w", pkg, err)
			}
		}
	}
	return nil
}
