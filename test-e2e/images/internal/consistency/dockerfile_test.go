// Package consistency checks that the Dockerfiles for real registries build the same images as
// the local recipes. Docker is not available where the local images are built, so this is what
// keeps the two paths from drifting: same user, working directory, entrypoint, agent wrapper and
// package set, and every COPY source exists in the repo.
package consistency

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxsession/platform/test-e2e/images/internal/recipe"
)

// repo is the repository root, relative to this package's directory.
const repo = "../../../.."

// stage is the final stage of a Dockerfile as far as the image config is concerned.
type stage struct {
	user, workdir string
	entrypoint    []string
	heredocs      map[string]string // COPY <<'X' ... X: destination -> content
	aptPackages   []string
}

func TestDockerfilesMatchRecipes(t *testing.T) {
	for _, c := range []struct{ dockerfile, recipe string }{
		{"sandbox-agent/Dockerfile", "sandbox-agent.json"},
		{"operator/Dockerfile", "operator.json"},
		{"api-gateway/Dockerfile", "api-gateway.json"},
	} {
		t.Run(c.dockerfile, func(t *testing.T) {
			r, err := recipe.Load(filepath.Join("../../recipes", c.recipe), map[string]string{"BUILD": "/build"})
			if err != nil {
				t.Fatal(err)
			}
			s := parse(t, filepath.Join(repo, c.dockerfile))
			if s.user != r.Config.User || s.workdir != r.Config.WorkingDir ||
				strings.Join(s.entrypoint, " ") != strings.Join(r.Config.Entrypoint, " ") {
				t.Fatalf("Dockerfile USER %q WORKDIR %q ENTRYPOINT %q; recipe user %q workingDir %q entrypoint %q",
					s.user, s.workdir, s.entrypoint, r.Config.User, r.Config.WorkingDir, r.Config.Entrypoint)
			}
			for _, dest := range recipeScripts(r) {
				if _, ok := s.heredocs[dest]; !ok {
					t.Errorf("recipe writes %s inline; the Dockerfile has no COPY heredoc for it", dest)
				}
			}
			for dest, body := range s.heredocs {
				if want := recipeFile(r, dest); want != body {
					t.Errorf("%s differs: Dockerfile %q, recipe %q", dest, body, want)
				}
			}
			for _, pkg := range recipePackages(r) {
				if !contains(s.aptPackages, pkg) {
					t.Errorf("recipe copies package %s; the Dockerfile does not install it", pkg)
				}
			}
		})
	}
}

// recipePackages lists the Debian packages a recipe copies, with the python3 split packages
// folded into "python3" (what apt-get installs them as).
func recipePackages(r *recipe.Recipe) []string {
	var out []string
	for _, l := range r.Layers {
		for _, e := range l.Entries {
			for _, p := range e.Packages {
				if strings.HasPrefix(p, "python3") || strings.HasPrefix(p, "libpython3") {
					p = "python3"
				}
				if !contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// recipeScripts lists the inline files a recipe installs as commands (under /usr/local/bin).
func recipeScripts(r *recipe.Recipe) []string {
	var out []string
	for _, l := range r.Layers {
		for _, e := range l.Entries {
			if e.Content != nil && strings.HasPrefix(e.File, "/usr/local/bin/") {
				out = append(out, e.File)
			}
		}
	}
	return out
}

func recipeFile(r *recipe.Recipe, dest string) string {
	for _, l := range r.Layers {
		for _, e := range l.Entries {
			if e.File == dest && e.Content != nil {
				return *e.Content
			}
		}
	}
	return "<no inline file " + dest + " in the recipe>"
}

func parse(t *testing.T, path string) stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s stage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for strings.HasSuffix(line, "\\") && sc.Scan() {
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(sc.Text())
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "FROM":
			s = stage{heredocs: map[string]string{}}
		case "USER":
			s.user = fields[1]
		case "WORKDIR":
			s.workdir = fields[1]
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT ")), &s.entrypoint); err != nil {
				t.Fatalf("%s: ENTRYPOINT must be JSON (exec form): %v", path, err)
			}
		case "RUN":
			s.aptPackages = append(s.aptPackages, aptInstall(fields)...)
		case "COPY":
			copyLine(t, path, fields, sc, &s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// aptInstall returns the package names of an `apt-get install` in a RUN line.
func aptInstall(fields []string) []string {
	var out []string
	in := false
	for _, f := range fields {
		switch {
		case f == "install":
			in = true
		case f == "&&":
			in = false
		case in && !strings.HasPrefix(f, "-"):
			out = append(out, f)
		}
	}
	return out
}

// copyLine checks that a COPY's sources exist in the repo, or records a heredoc's content.
func copyLine(t *testing.T, path string, fields []string, sc *bufio.Scanner, s *stage) {
	t.Helper()
	var args []string
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "--from=") {
			return // copies from another stage
		}
		if !strings.HasPrefix(f, "--") {
			args = append(args, f)
		}
	}
	if strings.HasPrefix(args[0], "<<") {
		marker := strings.Trim(strings.TrimPrefix(args[0], "<<"), `'"`)
		var body strings.Builder
		for sc.Scan() && sc.Text() != marker {
			body.WriteString(sc.Text() + "\n")
		}
		s.heredocs[args[len(args)-1]] = body.String()
		return
	}
	for _, src := range args[:len(args)-1] {
		if _, err := os.Stat(filepath.Join(repo, src)); err != nil {
			t.Errorf("%s: COPY source %s: %v", path, src, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
