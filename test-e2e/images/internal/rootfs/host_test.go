package rootfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture builds a fake host root: files (path -> content), symlinks (path -> target).
func fixture(t *testing.T, files, links map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(body), 0o644))
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.Symlink(target, full))
	}
	return root
}

func kindOf(t *testing.T, tr *Tree, p string) string {
	t.Helper()
	e, ok := tr.Get(p)
	if !ok {
		return "missing"
	}
	if e.Kind == KindSymlink {
		return "symlink->" + e.Target
	}
	return e.Kind.String()
}

func TestHostKeepsSymlinksAndCopiesTargets(t *testing.T) {
	root := fixture(t,
		map[string]string{"/usr/bin/mawk": "awk", "/usr/lib/x/libz.so.1.2": "z"},
		map[string]string{
			"/bin": "usr/bin", "/usr/bin/awk": "/etc/alternatives/awk", "/etc/alternatives/awk": "/usr/bin/mawk",
			"/usr/lib/x/libz.so.1": "libz.so.1.2",
		})
	tr := NewTree()
	h := NewHost(root, tr)
	must(t, h.Add("/bin/awk", AddOptions{}))
	must(t, h.Add("/usr/lib/x/libz.so.1", AddOptions{}))
	want := map[string]string{
		"/bin":                   "symlink->usr/bin",
		"/usr/bin/awk":           "symlink->/etc/alternatives/awk",
		"/etc/alternatives/awk":  "symlink->/usr/bin/mawk",
		"/usr/bin/mawk":          "file",
		"/usr/lib/x/libz.so.1":   "symlink->libz.so.1.2",
		"/usr/lib/x/libz.so.1.2": "file",
		"/bin/awk":               "missing", // reached through the /bin link, never stored twice
	}
	for p, k := range want {
		if got := kindOf(t, tr, p); got != k {
			t.Errorf("%s: %s, want %s", p, got, k)
		}
	}
	if e, _ := tr.Get("/usr/bin/mawk"); e.Source != filepath.Join(root, "usr/bin/mawk") {
		t.Errorf("mawk source = %s", e.Source)
	}
}

func TestHostTreesSkipAndDanglingLinks(t *testing.T) {
	root := fixture(t,
		map[string]string{"/opt/app/a.js": "a", "/opt/app/doc/README": "r"},
		map[string]string{"/opt/app/gone": "/nowhere", "/explicit-gone": "/nowhere"})
	tr := NewTree()
	h := NewHost(root, tr)
	var warnings []string
	h.Warn = func(m string) { warnings = append(warnings, m) }
	must(t, h.Add("/opt/app", AddOptions{Recursive: true, Skip: Excluder([]string{"/opt/app/doc"})}))
	if kindOf(t, tr, "/opt/app/a.js") != "file" || kindOf(t, tr, "/opt/app/doc") != "missing" {
		t.Fatalf("tree = %s", paths(tr.Sorted()))
	}
	if kindOf(t, tr, "/opt/app/gone") != "symlink->/nowhere" || len(warnings) != 1 {
		t.Fatalf("dangling link inside a tree: %s, warnings %v", kindOf(t, tr, "/opt/app/gone"), warnings)
	}
	if err := h.Add("/explicit-gone", AddOptions{}); err == nil {
		t.Fatal("a dangling path named explicitly: want an error")
	}
}

func TestPackageFilesAndExcluder(t *testing.T) {
	root := fixture(t, map[string]string{
		"/var/lib/dpkg/info/tool:amd64.list": "/.\n/usr\n/usr/bin\n/usr/bin/tool\n/usr/share/doc/tool/copyright\n",
	}, nil)
	h := NewHost(root, NewTree())
	files, err := h.PackageFiles("tool")
	must(t, err)
	if strings.Join(files, " ") != "/usr /usr/bin /usr/bin/tool /usr/share/doc/tool/copyright" {
		t.Fatalf("files = %v", files)
	}
	if _, err := h.PackageFiles("absent"); err == nil || !strings.Contains(err.Error(), "apt-get install absent") {
		t.Fatalf("err = %v", err)
	}
	skip := Excluder([]string{"/usr/share/doc", "/usr/lib/*.a"})
	for p, want := range map[string]bool{
		"/usr/share/doc": true, "/usr/share/doc/x": true, "/usr/share/docs": false, "/usr/lib/libc.a": true, "/usr/lib/libc.so": false,
	} {
		if skip(p) != want {
			t.Errorf("skip(%s) = %v, want %v", p, !want, want)
		}
	}
}

// TestELFClosure compiles a tiny executable and two libraries (no libc, so the fixture root needs
// nothing from the host): exe needs libfoo (found in LibDirs through a soname symlink), libfoo
// needs libbar (found through its RUNPATH $ORIGIN/../private), and exe names an interpreter.
func TestELFClosure(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	root := fixture(t, map[string]string{"/lib/ld-fake.so.1": "not really a loader"}, nil)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "bar.c"), []byte("int bar(void) { return 1; }\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "foo.c"), []byte("int bar(void); int foo(void) { return bar(); }\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "main.c"), []byte("int foo(void); void _start(void) { foo(); }\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "opt/private"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "opt/lib"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	gcc := func(args ...string) {
		t.Helper()
		out, err := exec.Command("gcc", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	gcc("-shared", "-nostdlib", "-fPIC", "-Wl,-soname,libbar.so.1", "-o", filepath.Join(root, "opt/private/libbar.so.1"), filepath.Join(src, "bar.c"))
	gcc("-shared", "-nostdlib", "-fPIC", "-Wl,-soname,libfoo.so.1", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../private",
		"-o", filepath.Join(root, "opt/lib/libfoo.so.1.0"), filepath.Join(src, "foo.c"),
		"-L"+filepath.Join(root, "opt/private"), "-l:libbar.so.1")
	must(t, os.Symlink("libfoo.so.1.0", filepath.Join(root, "opt/lib/libfoo.so.1")))
	gcc("-nostdlib", "-Wl,--dynamic-linker=/lib/ld-fake.so.1", "-o", filepath.Join(root, "bin/exe"), filepath.Join(src, "main.c"),
		"-L"+filepath.Join(root, "opt/lib"), "-l:libfoo.so.1", "-Wl,-rpath-link,"+filepath.Join(root, "opt/private"))

	tr := NewTree()
	h := NewHost(root, tr)
	h.LibDirs = []string{"/usr/lib", "/opt/lib"}
	must(t, h.Add("/bin/exe", AddOptions{}))
	for p, k := range map[string]string{
		"/bin/exe": "file", "/lib/ld-fake.so.1": "file", "/opt/lib/libfoo.so.1": "symlink->libfoo.so.1.0",
		"/opt/lib/libfoo.so.1.0": "file", "/opt/private/libbar.so.1": "file",
	} {
		if got := kindOf(t, tr, p); got != k {
			t.Errorf("%s: %s, want %s", p, got, k)
		}
	}

	must(t, os.Remove(filepath.Join(root, "opt/private/libbar.so.1")))
	err := NewHost(root, NewTree()).Add("/opt/lib/libfoo.so.1.0", AddOptions{})
	if err == nil || !strings.Contains(err.Error(), "needs libbar.so.1") {
		t.Fatalf("missing library: err = %v, want 'needs libbar.so.1'", err)
	}
}
