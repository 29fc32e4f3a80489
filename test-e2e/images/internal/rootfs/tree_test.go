package rootfs

import (
	"strings"
	"testing"
)

func paths(es []*Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return strings.Join(out, " ")
}

func TestTreeAddsImpliedParentsAndSortsByPath(t *testing.T) {
	tr := NewTree()
	must(t, tr.Add(Entry{Path: "/usr/bin/b", Kind: KindFile, Mode: 0o755, Content: []byte("b")}))
	must(t, tr.Add(Entry{Path: "/etc/a", Kind: KindFile, Mode: 0o644, Content: []byte("a")}))
	if got, want := paths(tr.Sorted()), "/etc /etc/a /usr /usr/bin /usr/bin/b"; got != want {
		t.Fatalf("paths = %q, want %q", got, want)
	}
	if e, _ := tr.Get("/usr/bin"); !e.Implied || e.Mode != 0o755 || e.Kind != KindDir {
		t.Fatalf("/usr/bin = %+v, want an implied 0755 dir", e)
	}
	// An explicit directory replaces the implied one.
	must(t, tr.Add(Entry{Path: "/usr/bin", Kind: KindDir, Mode: 0o700, UID: 5}))
	if e, _ := tr.Get("/usr/bin"); e.Implied || e.Mode != 0o700 || e.UID != 5 {
		t.Fatalf("/usr/bin = %+v, want the explicit dir", e)
	}
}

func TestTreeConflicts(t *testing.T) {
	tr := NewTree()
	must(t, tr.Add(Entry{Path: "/a", Kind: KindFile, Mode: 0o644, Content: []byte("1")}))
	must(t, tr.Add(Entry{Path: "/a", Kind: KindFile, Mode: 0o644, Content: []byte("1")})) // identical: fine
	if err := tr.Add(Entry{Path: "/a", Kind: KindFile, Mode: 0o644, Content: []byte("2")}); err == nil {
		t.Fatal("two different files at /a: want an error")
	}
	must(t, tr.Add(Entry{Path: "/lib", Kind: KindSymlink, Mode: 0o777, Target: "usr/lib"}))
	if err := tr.Add(Entry{Path: "/lib/x", Kind: KindFile, Content: []byte{}}); err == nil {
		t.Fatal("file beneath a symlink: want an error")
	}
	must(t, tr.Add(Entry{Path: "/d/f", Kind: KindFile, Content: []byte{}}))
	if err := tr.Add(Entry{Path: "/d", Kind: KindSymlink, Target: "x"}); err == nil {
		t.Fatal("symlink replacing a directory with children: want an error")
	}
	if err := tr.Add(Entry{Path: "rel", Kind: KindDir}); err == nil {
		t.Fatal("relative path: want an error")
	}
}

func TestStackThinsAgainstLowerLayers(t *testing.T) {
	lower := NewTree()
	must(t, lower.Add(Entry{Path: "/lib", Kind: KindSymlink, Mode: 0o777, Target: "usr/lib"}))
	must(t, lower.Add(Entry{Path: "/usr/lib/libc.so.6", Kind: KindFile, Mode: 0o755, Source: "/usr/lib/libc.so.6"}))
	must(t, lower.Add(Entry{Path: "/tmp", Kind: KindDir, Mode: 0o1777}))
	s := NewStack()
	low, err := s.Thin(lower)
	must(t, err)
	s.Push(low)

	upper := NewTree()
	must(t, upper.Add(Entry{Path: "/lib", Kind: KindSymlink, Mode: 0o777, Target: "usr/lib"}))                       // same: dropped
	must(t, upper.Add(Entry{Path: "/usr/lib/libc.so.6", Kind: KindFile, Mode: 0o755, Source: "/usr/lib/libc.so.6"})) // same: dropped
	must(t, upper.Add(Entry{Path: "/usr/lib/libnew.so", Kind: KindFile, Mode: 0o644, Source: "/usr/lib/libnew.so"}))
	must(t, upper.Add(Entry{Path: "/tmp/x", Kind: KindFile, Content: []byte("x")})) // implied /tmp must not reset 1777
	got, err := s.Thin(upper)
	must(t, err)
	if want := "/tmp/x /usr/lib/libnew.so"; paths(got) != want {
		t.Fatalf("thinned = %q, want %q", paths(got), want)
	}

	bad := NewTree()
	must(t, bad.Add(Entry{Path: "/lib/x86_64-linux-gnu/libz.so", Kind: KindFile, Content: []byte{}}))
	if _, err := s.Thin(bad); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("writing beneath a lower symlink: err = %v, want an error naming the symlink", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
