package rootfs

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// libKey identifies a resolved library: the same soname can exist for several ELF classes
// (a 32-bit libc in /lib32), and only the one matching the requester is loadable.
type libKey struct {
	name    string
	class   elf.Class
	machine elf.Machine
}

// addELFDeps copies the program interpreter and the DT_NEEDED closure of host file src, whose
// image directory is origin (for $ORIGIN in RUNPATH). Files that are not ELF are ignored.
//
// The closure is read from the ELF headers instead of running ldd: nothing on the host is
// executed, shared objects that cannot be run directly are handled the same way, and the
// search order (RPATH/RUNPATH, then LibDirs) is explicit.
func (h *Host) addELFDeps(src, origin string) error {
	isELF, err := hasELFMagic(src)
	if err != nil || !isELF {
		return err
	}
	f, err := elf.Open(src)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if interp != "" {
		if err := h.Add(interp, AddOptions{}); err != nil {
			return fmt.Errorf("%s: interpreter: %w", src, err)
		}
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	dirs, err := h.searchDirs(f, origin)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, name := range needed {
		if err := h.addLib(libKey{name, f.Class, f.Machine}, dirs, src); err != nil {
			return err
		}
	}
	return nil
}

func (h *Host) addLib(key libKey, dirs []string, requester string) error {
	if _, ok := h.libs[key]; ok {
		return nil
	}
	found, err := h.findLib(key, dirs)
	if err != nil {
		return err
	}
	if found == "" {
		return fmt.Errorf("%s needs %s: not found in %s", requester, key.name, strings.Join(dirs, ":"))
	}
	h.libs[key] = found
	return h.Add(found, AddOptions{})
}

// findLib returns the first candidate in dirs that is an ELF file of the requester's class and
// machine, as the dynamic loader would pick it.
func (h *Host) findLib(key libKey, dirs []string) (string, error) {
	candidates := dirs
	if strings.Contains(key.name, "/") {
		candidates = []string{""}
	}
	for _, dir := range candidates {
		p := path.Join(dir, key.name)
		ok, err := h.matchesELF(p, key)
		if err != nil {
			return "", err
		}
		if ok {
			return p, nil
		}
	}
	return "", nil
}

func (h *Host) matchesELF(p string, key libKey) (bool, error) {
	hp := h.hostPath(p)
	if _, err := os.Stat(hp); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil // a missing candidate means "look in the next directory"
	} else if err != nil {
		return false, err
	}
	isELF, err := hasELFMagic(hp)
	if err != nil || !isELF {
		return false, err
	}
	f, err := elf.Open(hp)
	if err != nil {
		return false, fmt.Errorf("%s: %w", hp, err)
	}
	defer f.Close()
	return f.Class == key.class && f.Machine == key.machine, nil
}

// searchDirs lists RPATH (only without RUNPATH, as ld.so does), RUNPATH, then LibDirs.
func (h *Host) searchDirs(f *elf.File, origin string) ([]string, error) {
	runpath, err := f.DynString(elf.DT_RUNPATH)
	if err != nil {
		return nil, err
	}
	var own []string
	if len(runpath) == 0 {
		if own, err = f.DynString(elf.DT_RPATH); err != nil {
			return nil, err
		}
	} else {
		own = runpath
	}
	var dirs []string
	for _, list := range own {
		for _, d := range strings.Split(list, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d != "" {
				dirs = append(dirs, path.Clean(d))
			}
		}
	}
	return append(dirs, h.LibDirs...), nil
}

func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return "", err
		}
		return string(bytes.TrimRight(data, "\x00")), nil
	}
	return "", nil
}

func hasELFMagic(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return false, nil // shorter than the magic number: not ELF
	} else if err != nil {
		return false, err
	}
	return string(magic[:]) == elf.ELFMAG, nil
}
