package recipe

import (
	"errors"
	"fmt"
	"path"
	"strconv"
)

// Entry is one instruction of a layer. Exactly one of Dir, File, Symlink, Host or Packages is set.
type Entry struct {
	// Dir creates a directory at this image path.
	Dir string `json:"dir,omitempty"`
	// File creates a regular file at this image path, from Content or from the host file Source.
	File string `json:"file,omitempty"`
	// Symlink creates a symbolic link at this image path pointing to Target.
	Symlink string `json:"symlink,omitempty"`
	// Host copies host paths (globs allowed) to the same image paths: directories recursively,
	// symlinks kept and followed, ELF files with their shared-library closure.
	Host []string `json:"host,omitempty"`
	// Packages copies the files of installed Debian packages (from the dpkg file lists), with the
	// ELF closure of each, minus Exclude and the documentation directories.
	Packages []string `json:"packages,omitempty"`

	Content *string `json:"content,omitempty"`
	Source  string  `json:"source,omitempty"`
	Target  string  `json:"target,omitempty"`
	// Mode is octal ("0755", "1777"); defaults: 0755 for directories, 0644 for Content, the host
	// file's permissions for Source.
	Mode string `json:"mode,omitempty"`
	UID  int    `json:"uid,omitempty"`
	GID  int    `json:"gid,omitempty"`
	// Exclude drops image paths from Host and Packages: a pattern with '*' is matched with
	// path.Match against the whole path, any other pattern as a directory prefix.
	Exclude []string `json:"exclude,omitempty"`
}

// ParseMode returns the entry's octal mode, or def when none is given.
func (e *Entry) ParseMode(def uint32) (uint32, error) {
	if e.Mode == "" {
		return def, nil
	}
	m, err := strconv.ParseUint(e.Mode, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("mode %q is not an octal permission (0000-7777)", e.Mode)
	}
	return uint32(m), nil
}

func (e *Entry) kinds() int {
	n := 0
	for _, set := range []bool{e.Dir != "", e.File != "", e.Symlink != "", len(e.Host) > 0, len(e.Packages) > 0} {
		if set {
			n++
		}
	}
	return n
}

func (e *Entry) validate() error {
	if e.kinds() != 1 {
		return errors.New("exactly one of dir, file, symlink, host, packages must be set")
	}
	if _, err := e.ParseMode(0); err != nil {
		return err
	}
	for _, p := range []string{e.Dir, e.File, e.Symlink} {
		if p != "" && (!path.IsAbs(p) || path.Clean(p) != p || p == "/") {
			return fmt.Errorf("image path %q must be absolute, clean and not /", p)
		}
	}
	for _, pat := range e.Exclude {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("exclude pattern %q: %w", pat, err)
		}
	}
	switch {
	case e.File != "" && (e.Content == nil) == (e.Source == ""):
		return fmt.Errorf("file %s needs exactly one of content or source", e.File)
	case e.Symlink != "" && e.Target == "":
		return fmt.Errorf("symlink %s needs a target", e.Symlink)
	}
	return nil
}

// expand substitutes variables in the fields that name host inputs.
func (e *Entry) expand(x *expander) error {
	var err error
	if e.Source, err = x.expand(e.Source); err != nil {
		return err
	}
	for i, h := range e.Host {
		if e.Host[i], err = x.expand(h); err != nil {
			return err
		}
	}
	return nil
}
