// Command imgbuild builds OCI images from local files with no daemon and no registry, and reads
// back what an oci-archive holds.
//
//	imgbuild build -recipe recipes/testbox.json -out testbox.tar -cache DIR [-var NAME=VALUE]...
//	imgbuild info ARCHIVE...   (prints "ref<TAB>manifest digest<TAB>bytes" per archive)
package main

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxsession/platform/test-e2e/images/internal/build"
	"github.com/sandboxsession/platform/test-e2e/images/internal/oci"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imgbuild build|info ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(os.Args[2:])
	case "info":
		err = runInfo(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (build, info)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imgbuild:", err)
		os.Exit(1)
	}
}

// varFlags collects repeated -var NAME=VALUE flags.
type varFlags map[string]string

func (v varFlags) String() string { return fmt.Sprint(map[string]string(v)) }

func (v varFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return errors.New("want NAME=VALUE")
	}
	v[name] = value
	return nil
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	vars := varFlags{}
	o := build.Options{Vars: vars, Warn: func(m string) { fmt.Fprintln(os.Stderr, "imgbuild: warning:", m) }}
	fs.StringVar(&o.Recipe, "recipe", "", "recipe file (required)")
	fs.StringVar(&o.Out, "out", "", "oci-archive tarball to write (required)")
	fs.StringVar(&o.CacheDir, "cache", "", "layer cache directory (required)")
	fs.StringVar(&o.Root, "root", "/", "host root that host paths and dpkg lists are read from")
	// BestSpeed: layers are imported locally, so compression time matters more than bytes.
	fs.IntVar(&o.GzipLevel, "gzip-level", gzip.BestSpeed, "gzip level of layers (1-9)")
	defEpoch, err := envEpoch()
	if err != nil {
		return err
	}
	epoch := fs.Int64("epoch", defEpoch, "mtime/created time in Unix seconds (default $SOURCE_DATE_EPOCH or 0)")
	fs.Var(vars, "var", "NAME=VALUE for ${NAME} in recipe input paths (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Recipe == "" || o.Out == "" || o.CacheDir == "" {
		return errors.New("build needs -recipe, -out and -cache")
	}
	o.Epoch = time.Unix(*epoch, 0).UTC()
	start := time.Now()
	res, err := build.Build(o)
	if err != nil {
		return err
	}
	state := "unchanged"
	if res.Written {
		state = "written"
	}
	fmt.Printf("%-48s %s %8s  %d layers (%d cached)  %.1fs  %s\n", res.Ref, res.Digest[:19],
		humanSize(res.Size), res.Layers, res.CachedLayers, time.Since(start).Seconds(), state)
	return nil
}

func runInfo(args []string) error {
	if len(args) == 0 {
		return errors.New("info needs at least one archive")
	}
	for _, a := range args {
		s, err := oci.Summarize(a)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%d\n", s.Ref, s.Digest, s.ArchiveSize)
	}
	return nil
}

// envEpoch reads SOURCE_DATE_EPOCH (the reproducible-builds convention); unset means 0.
func envEpoch() (int64, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a Unix time in seconds", v)
	}
	return n, nil
}

func humanSize(n int64) string {
	return fmt.Sprintf("%.1fMB", float64(n)/1e6)
}
