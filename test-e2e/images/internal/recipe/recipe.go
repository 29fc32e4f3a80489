// Package recipe reads image recipes: JSON files that name an image, its runtime config and the
// layers its root filesystem is assembled from. Recipes are data so that adding a tool to an image
// is a one-line change reviewed like any other file, and so the builder stays generic.
package recipe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Recipe is one image: its reference, its config and its layers (bottom first).
type Recipe struct {
	// Ref is the full image reference, e.g. localhost/sandbox-platform/pause:3.10.
	Ref string `json:"ref"`
	// Config holds the runtime defaults written into the OCI image config.
	Config Config `json:"config"`
	// LayerFiles are paths of layer files, relative to the recipe file.
	LayerFiles []string `json:"layers"`
	// Layers are the parsed layers, in LayerFiles order (filled by Load).
	Layers []Layer `json:"-"`
}

// Config mirrors the OCI image config fields a recipe may set.
type Config struct {
	User       string            `json:"user,omitempty"`
	Entrypoint []string          `json:"entrypoint,omitempty"`
	Cmd        []string          `json:"cmd,omitempty"`
	Env        []string          `json:"env,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	StopSignal string            `json:"stopSignal,omitempty"`
}

// Layer is a named list of entries; Include pulls in the entries of other layer files first.
type Layer struct {
	Name    string   `json:"name"`
	Include []string `json:"include,omitempty"`
	Entries []Entry  `json:"entries"`
}

// Load reads a recipe and its layer files, expanding ${NAME} in input paths from vars.
func Load(path string, vars map[string]string) (*Recipe, error) {
	var r Recipe
	if err := decodeFile(path, &r); err != nil {
		return nil, err
	}
	if err := validateRef(r.Ref); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.LayerFiles) == 0 {
		return nil, fmt.Errorf("%s: a recipe needs at least one layer", path)
	}
	x := expander{vars: vars}
	for _, lf := range r.LayerFiles {
		l, err := loadLayer(filepath.Join(filepath.Dir(path), lf), &x, 0)
		if err != nil {
			return nil, err
		}
		r.Layers = append(r.Layers, *l)
	}
	return &r, nil
}

// maxIncludeDepth bounds include chains so a cycle is an error, not a hang.
const maxIncludeDepth = 8

func loadLayer(path string, x *expander, depth int) (*Layer, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("%s: includes nested deeper than %d (a cycle?)", path, maxIncludeDepth)
	}
	var l Layer
	if err := decodeFile(path, &l); err != nil {
		return nil, err
	}
	if l.Name == "" {
		return nil, fmt.Errorf("%s: layer has no name", path)
	}
	var entries []Entry
	for _, inc := range l.Include {
		sub, err := loadLayer(filepath.Join(filepath.Dir(path), inc), x, depth+1)
		if err != nil {
			return nil, err
		}
		entries = append(entries, sub.Entries...)
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		if err := e.expand(x); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
	}
	l.Entries = append(entries, l.Entries...)
	l.Include = nil
	return &l, nil
}

// decodeFile decodes strict JSON: an unknown field is a typo, and typos in recipes silently
// dropping a file from an image are exactly the bugs this should catch.
func decodeFile(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func validateRef(ref string) error {
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if ref == "" || colon <= slash || colon == len(ref)-1 {
		return fmt.Errorf("ref %q must be a full reference with a tag (host/path:tag)", ref)
	}
	return nil
}

// Tag returns the tag part of a reference (after the last colon following the last slash).
func Tag(ref string) string {
	return ref[strings.LastIndex(ref, ":")+1:]
}

type expander struct {
	vars map[string]string
}

// expand replaces ${NAME} with vars[NAME]; an unknown name is an error rather than an empty
// string, which would quietly turn "${BUILD}/pause" into "/pause".
func (x *expander) expand(s string) (string, error) {
	var missing []string
	out := os.Expand(s, func(name string) string {
		v, ok := x.vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("undefined variable(s) %s in %q (pass -var NAME=VALUE)", strings.Join(missing, ", "), s)
	}
	return out, nil
}
