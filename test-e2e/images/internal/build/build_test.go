package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/oci"
)

// setup writes a host fixture (a tool plus a library in a merged-/usr layout) and a two-layer
// recipe: "base" with inline files, "app" with the host tool and a build output.
func setup(t *testing.T) (opts Options, buildDir string) {
	t.Helper()
	root, dir, build := t.TempDir(), t.TempDir(), t.TempDir()
	put := func(p, body string, mode os.FileMode) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), mode))
	}
	put(filepath.Join(root, "usr/bin/tool"), "#!/bin/sh\necho tool\n", 0o755)
	must(t, os.Symlink("usr/bin", filepath.Join(root, "bin")))
	put(filepath.Join(build, "app.mjs"), "console.log('app')\n", 0o644)
	put(filepath.Join(dir, "layers/base.json"), `{"name": "base", "entries": [
		{"file": "/etc/passwd", "content": "root:x:0:0::/:/bin/sh\n"},
		{"dir": "/tmp", "mode": "1777"},
		{"host": ["/bin/tool"]}]}`, 0o644)
	put(filepath.Join(dir, "layers/app.json"), `{"name": "app", "entries": [
		{"host": ["/bin/tool"]},
		{"file": "/opt/app/app.mjs", "source": "${BUILD}/app.mjs"},
		{"dir": "/workspace", "uid": 1000, "gid": 1000}]}`, 0o644)
	put(filepath.Join(dir, "app.json"), `{"ref": "localhost/test/app:dev",
		"config": {"user": "1000:1000", "entrypoint": ["/bin/tool"], "env": ["HOME=/workspace"], "workingDir": "/workspace",
			"labels": {"org.opencontainers.image.title": "app"}},
		"layers": ["layers/base.json", "layers/app.json"]}`, 0o644)
	return Options{
		Recipe: filepath.Join(dir, "app.json"), Vars: map[string]string{"BUILD": build},
		Out: filepath.Join(t.TempDir(), "app.tar"), CacheDir: t.TempDir(), Root: root,
		GzipLevel: gzip.BestSpeed, Epoch: time.Unix(0, 0).UTC(), Warn: func(m string) { t.Log(m) },
	}, build
}

func TestBuildWritesAnImportableArchive(t *testing.T) {
	o, _ := setup(t)
	res, err := Build(o)
	must(t, err)
	if !res.Written || res.Layers != 2 || res.CachedLayers != 0 || res.Ref != "localhost/test/app:dev" {
		t.Fatalf("result = %+v", res)
	}
	sum, err := oci.Summarize(o.Out)
	must(t, err)
	if sum.Digest != res.Digest || sum.Ref != res.Ref {
		t.Fatalf("summary %+v vs result %+v", sum, res)
	}
	var idx oci.Index
	must(t, unmarshalMember(o.Out, "index.json", &idx))
	if a := idx.Manifests[0].Annotations; a[oci.AnnotationRefName] != "dev" || idx.Manifests[0].Platform.OS != "linux" {
		t.Fatalf("index entry = %+v", idx.Manifests[0])
	}
	var man oci.Manifest
	must(t, oci.ReadJSON(o.Out, res.Digest, &man))
	var img oci.Image
	must(t, oci.ReadJSON(o.Out, man.Config.Digest, &img))
	c := img.Config
	if c.User != "1000:1000" || strings.Join(c.Entrypoint, " ") != "/bin/tool" || c.WorkingDir != "/workspace" ||
		strings.Join(c.Env, " ") != "HOME=/workspace" || c.Labels["org.opencontainers.image.title"] != "app" {
		t.Fatalf("config = %+v", c)
	}
	if img.Created != "1970-01-01T00:00:00Z" || len(img.RootFS.DiffIDs) != 2 || len(man.Layers) != 2 || len(img.History) != 2 {
		t.Fatalf("image = %+v, manifest layers %d", img, len(man.Layers))
	}
	base := layerMembers(t, o.Out, man.Layers[0].Digest)
	app := layerMembers(t, o.Out, man.Layers[1].Digest)
	if got := strings.Join(base, " "); got != "bin etc/ etc/passwd tmp/ usr/ usr/bin/ usr/bin/tool" {
		t.Errorf("base layer = %s", got)
	}
	// The tool (and its /bin link) are in the base layer already: the app layer holds only what it adds.
	if got := strings.Join(app, " "); got != "opt/ opt/app/ opt/app/app.mjs workspace/" {
		t.Errorf("app layer = %s", got)
	}
}

func TestBuildIsReproducibleAndSkipsUnchanged(t *testing.T) {
	o, build := setup(t)
	first, err := Build(o)
	must(t, err)
	before, err := os.Stat(o.Out)
	must(t, err)

	again, err := Build(o)
	must(t, err)
	after, err := os.Stat(o.Out)
	must(t, err)
	if again.Digest != first.Digest || again.Written || again.CachedLayers != 2 || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("rebuild of unchanged inputs: %+v (archive rewritten: %v)", again, !after.ModTime().Equal(before.ModTime()))
	}

	// Another output and an empty cache give the same bytes: nothing depends on where or when.
	o2 := o
	o2.Out, o2.CacheDir = filepath.Join(t.TempDir(), "elsewhere.tar"), t.TempDir()
	other, err := Build(o2)
	must(t, err)
	a, err := os.ReadFile(o.Out)
	must(t, err)
	b, err := os.ReadFile(o2.Out)
	must(t, err)
	if other.Digest != first.Digest || !bytes.Equal(a, b) {
		t.Fatalf("fresh build: digest %s vs %s, archives equal: %v", other.Digest, first.Digest, bytes.Equal(a, b))
	}

	must(t, os.WriteFile(filepath.Join(build, "app.mjs"), []byte("console.log('v2')\n"), 0o644))
	changed, err := Build(o)
	must(t, err)
	if changed.Digest == first.Digest || !changed.Written || changed.CachedLayers != 1 {
		t.Fatalf("changed input: %+v, want a new digest with the base layer from the cache", changed)
	}
}

func TestBuildFailsOnMissingInput(t *testing.T) {
	o, build := setup(t)
	must(t, os.Remove(filepath.Join(build, "app.mjs")))
	if _, err := Build(o); err == nil || !strings.Contains(err.Error(), "app.mjs") {
		t.Fatalf("err = %v, want it to name the missing input", err)
	}
	if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed build left %s behind", o.Out)
	}
}

func unmarshalMember(archive, name string, v any) error {
	data, err := oci.ReadFile(archive, name)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func layerMembers(t *testing.T, archive, digest string) []string {
	t.Helper()
	blob, err := oci.ReadBlob(archive, digest)
	must(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	must(t, err)
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		names = append(names, h.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("layer members not sorted: %v", names)
	}
	return names
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
