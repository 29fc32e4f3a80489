package recipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadExpandsVarsAndIncludesFirst(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "layers/common.json", `{"name": "common", "entries": [{"dir": "/tmp", "mode": "1777"}]}`)
	write(t, dir, "layers/app.json", `{"name": "app", "include": ["common.json"],
		"entries": [{"file": "/app", "source": "${BUILD}/app"}]}`)
	r, err := Load(write(t, dir, "img.json", `{"ref": "localhost/x/app:dev", "config": {"user": "1000"},
		"layers": ["layers/app.json"]}`), map[string]string{"BUILD": "/out"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Layers) != 1 || r.Layers[0].Name != "app" {
		t.Fatalf("layers = %+v", r.Layers)
	}
	es := r.Layers[0].Entries
	if len(es) != 2 || es[0].Dir != "/tmp" || es[1].Source != "/out/app" {
		t.Fatalf("entries = %+v, want included /tmp first, then /app from /out/app", es)
	}
	if Tag(r.Ref) != "dev" || r.Config.User != "1000" {
		t.Fatalf("tag %q user %q", Tag(r.Ref), r.Config.User)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := map[string]struct{ recipe, layer, want string }{
		"undefined variable": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"file": "/a", "source": "${NOPE}/a"}]}`, "NOPE"},
		"unknown field": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"fiel": "/a", "content": ""}]}`, "unknown field"},
		"two kinds": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"dir": "/a", "symlink": "/b", "target": "a"}]}`, "exactly one"},
		"file without input": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"file": "/a"}]}`, "content or source"},
		"relative path": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"dir": "a"}]}`, "absolute"},
		"bad mode": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"dir": "/a", "mode": "0999"}]}`, "octal"},
		"bad exclude": {`{"ref": "h/x:1", "layers": ["l.json"]}`,
			`{"name": "l", "entries": [{"host": ["/a"], "exclude": ["/a/[*"]}]}`, "pattern"},
		"ref without tag": {`{"ref": "h/x", "layers": ["l.json"]}`, `{"name": "l", "entries": []}`, "tag"},
		"include cycle":   {`{"ref": "h/x:1", "layers": ["l.json"]}`, `{"name": "l", "include": ["l.json"], "entries": []}`, "cycle"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "l.json", c.layer)
			_, err := Load(write(t, dir, "r.json", c.recipe), map[string]string{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}
