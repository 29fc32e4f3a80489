// Package build turns a recipe into an oci-archive tarball: it assembles each layer's tree, thins
// it against the layers below, gets the compressed layer from the cache (building it on a miss),
// and writes the config, manifest and index.
package build

import (
	"fmt"
	"runtime"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/layer"
	"github.com/sandboxsession/platform/test-e2e/images/internal/oci"
	"github.com/sandboxsession/platform/test-e2e/images/internal/recipe"
	"github.com/sandboxsession/platform/test-e2e/images/internal/rootfs"
)

// Options are the inputs of one build.
type Options struct {
	// Recipe is the recipe file; Vars expand ${NAME} in its input paths.
	Recipe string
	Vars   map[string]string
	// Out is the oci-archive tarball to write.
	Out string
	// CacheDir holds compressed layers between builds.
	CacheDir string
	// Root is the host filesystem root host paths are read from ("/").
	Root string
	// GzipLevel is the layer compression level.
	GzipLevel int
	// Epoch is every mtime and the created time: fixed, so unchanged inputs give the same digest.
	Epoch time.Time
	// Warn receives non-fatal findings.
	Warn func(string)
}

// Result describes the image that was built.
type Result struct {
	Ref    string
	Digest string
	// Size is the archive size in bytes.
	Size int64
	// Layers is the layer count; CachedLayers of them came from the cache.
	Layers, CachedLayers int
	// Written is false when the archive already held this exact image and was left untouched.
	Written bool
}

// Build builds the image described by o.
func Build(o Options) (Result, error) {
	r, err := recipe.Load(o.Recipe, o.Vars)
	if err != nil {
		return Result{}, err
	}
	img, blobs, res, err := buildLayers(r, o)
	if err != nil {
		return Result{}, err
	}
	cfg, err := oci.JSONBlob(img)
	if err != nil {
		return Result{}, err
	}
	man := oci.Manifest{SchemaVersion: 2, MediaType: oci.MediaTypeManifest,
		Config: oci.Descriptor{MediaType: oci.MediaTypeConfig, Digest: cfg.Digest, Size: cfg.Size}}
	for _, b := range blobs {
		man.Layers = append(man.Layers, oci.Descriptor{MediaType: oci.MediaTypeLayerGz, Digest: b.Digest, Size: b.Size})
	}
	manBlob, err := oci.JSONBlob(man)
	if err != nil {
		return Result{}, err
	}
	res.Ref, res.Digest = r.Ref, manBlob.Digest
	if old, err := oci.Summarize(o.Out); err == nil && old.Digest == manBlob.Digest && old.Ref == r.Ref {
		res.Size = old.ArchiveSize
		return res, nil
	}
	idx := oci.Index{SchemaVersion: 2, MediaType: oci.MediaTypeIndex, Manifests: []oci.Descriptor{{
		MediaType: oci.MediaTypeManifest, Digest: manBlob.Digest, Size: manBlob.Size,
		Platform:    &oci.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Annotations: map[string]string{oci.AnnotationContainerdName: r.Ref, oci.AnnotationRefName: recipe.Tag(r.Ref)},
	}}}
	if err := oci.WriteArchive(o.Out, idx, append(blobs, cfg, manBlob), o.Epoch); err != nil {
		return Result{}, err
	}
	sum, err := oci.Summarize(o.Out)
	if err != nil {
		return Result{}, err
	}
	res.Size, res.Written = sum.ArchiveSize, true
	return res, nil
}

// buildLayers returns the image config and the layer blobs, bottom first.
func buildLayers(r *recipe.Recipe, o Options) (oci.Image, []oci.Blob, Result, error) {
	created := o.Epoch.UTC().Format(time.RFC3339)
	img := oci.Image{Created: created, Architecture: runtime.GOARCH, OS: "linux",
		Config: imageConfig(r.Config), RootFS: oci.RootFS{Type: "layers"}}
	cache := &layer.Cache{Dir: o.CacheDir, Level: o.GzipLevel}
	stack := rootfs.NewStack()
	var blobs []oci.Blob
	res := Result{Layers: len(r.Layers)}
	for _, l := range r.Layers {
		tree, err := rootfs.Assemble(l, o.Root, o.Warn)
		if err != nil {
			return img, nil, res, err
		}
		entries, err := stack.Thin(tree)
		if err != nil {
			return img, nil, res, fmt.Errorf("layer %s: %w", l.Name, err)
		}
		stack.Push(entries)
		b, cached, err := cache.Layer(entries, o.Epoch)
		if err != nil {
			return img, nil, res, fmt.Errorf("layer %s: %w", l.Name, err)
		}
		if cached {
			res.CachedLayers++
		}
		blobs = append(blobs, oci.Blob{Digest: b.Digest, Path: cache.BlobPath(b.Digest), Size: b.Size})
		img.RootFS.DiffIDs = append(img.RootFS.DiffIDs, b.DiffID)
		img.History = append(img.History, oci.HistoryEntry{Created: created, CreatedBy: "imgbuild layer " + l.Name})
	}
	return img, blobs, res, nil
}

func imageConfig(c recipe.Config) oci.ImageConfig {
	return oci.ImageConfig{User: c.User, Env: c.Env, Entrypoint: c.Entrypoint, Cmd: c.Cmd,
		WorkingDir: c.WorkingDir, Labels: c.Labels, StopSignal: c.StopSignal}
}
