package rootfs

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DocExcludes are dropped from every package: documentation is the bulk of most packages and
// nothing in a sandbox reads it.
var DocExcludes = []string{
	"/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale", "/usr/share/lintian",
	"/usr/share/bug", "/usr/share/doc-base", "/usr/share/bash-completion", "/usr/share/zsh",
}

// dpkgInfo is where dpkg keeps one file list per installed package.
const dpkgInfo = "/var/lib/dpkg/info"

// PackageFiles lists the paths an installed Debian package owns, from dpkg's file list
// (<name>.list, or <name>:<arch>.list for multi-arch packages).
func (h *Host) PackageFiles(pkg string) ([]string, error) {
	dir := h.hostPath(dpkgInfo)
	candidates := []string{filepath.Join(dir, pkg+".list")}
	multi, err := filepath.Glob(filepath.Join(dir, pkg+":*.list"))
	if err != nil {
		return nil, err
	}
	candidates = append(candidates, multi...)
	for _, c := range candidates {
		f, err := os.Open(c)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readList(f)
	}
	return nil, fmt.Errorf("package %s is not installed on this host (apt-get install %s)", pkg, pkg)
}

func readList(f *os.File) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := path.Clean(strings.TrimSpace(sc.Text()))
		if p != "/" && p != "." && path.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// Excluder returns a predicate for image paths: a pattern containing '*' is matched against the
// whole path with path.Match; any other pattern matches itself and everything below it.
func Excluder(patterns []string) func(string) bool {
	return func(p string) bool {
		for _, pat := range patterns {
			if strings.Contains(pat, "*") {
				if ok, _ := path.Match(pat, p); ok {
					return true
				}
			} else if p == pat || strings.HasPrefix(p, pat+"/") {
				return true
			}
		}
		return false
	}
}
