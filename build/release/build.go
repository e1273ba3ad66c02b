package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// targets are the platforms a release ships binaries for.
var targets = []struct{ goos, goarch string }{
	{"linux", "amd64"},
	{"linux", "arm64"},
	{"darwin", "arm64"},
}

// binary is one built cairn binary.
type binary struct {
	goos, goarch string
	path         string
	stamp        stamp
}

// stamp is what the go command stamped into a binary from git.
type stamp struct {
	Version  string    // the module version: the tag at HEAD, else a pseudo-version; "+dirty" for a modified tree
	Revision string    // the full commit hash
	Time     time.Time // the commit's time, used for every file date so builds are reproducible
}

// fileVersion is the version in artifact names: without the "v".
func (s stamp) fileVersion() string { return strings.TrimPrefix(s.Version, "v") }

// buildAll builds cmd/cairn for every target into out/bin/<os>_<arch>/,
// statically and without local paths, and checks that the toolchain
// stamped each with the same version.
func buildAll(ctx context.Context, repo, out string, logger *slog.Logger) ([]binary, error) {
	var bins []binary
	for _, t := range targets {
		path := filepath.Join(out, "bin", t.goos+"_"+t.goarch, "cairn")
		// -buildvcs=true on the command line wins over a GOFLAGS of
		// -buildvcs=false, and fails loudly where git cannot be asked.
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=true", "-o", path, "./cmd/cairn")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.goos, "GOARCH="+t.goarch)
		start := time.Now()
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build for %s/%s: %w\n%s", t.goos, t.goarch, err, b)
		}
		s, err := readStamp(path)
		if err != nil {
			return nil, err
		}
		if len(bins) > 0 && s != bins[0].stamp {
			return nil, fmt.Errorf("%s/%s was stamped %+v, %s/%s %+v: the tree changed during the build", t.goos, t.goarch, s, bins[0].goos, bins[0].goarch, bins[0].stamp)
		}
		logger.Info("built", "target", t.goos+"/"+t.goarch, "version", s.Version, "took", time.Since(start).Round(time.Second))
		bins = append(bins, binary{goos: t.goos, goarch: t.goarch, path: path, stamp: s})
	}
	return bins, nil
}

// readStamp reads the version and VCS settings the go command put in the
// binary at path.
func readStamp(path string) (stamp, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return stamp{}, fmt.Errorf("read build info of %s: %w", path, err)
	}
	s := stamp{Version: bi.Main.Version}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.Revision = kv.Value
		case "vcs.time":
			if s.Time, err = time.Parse(time.RFC3339, kv.Value); err != nil {
				return stamp{}, fmt.Errorf("%s: vcs.time %q: %w", path, kv.Value, err)
			}
		}
	}
	if s.Revision == "" || s.Version == "" || s.Version == "(devel)" {
		return stamp{}, fmt.Errorf("%s has no version from git (version %q, revision %q): build from a git clone, not a worktree or an export", path, s.Version, s.Revision)
	}
	return s, nil
}

// archive writes cairn_<version>_<os>_<arch>.tar.gz holding the binary
// and returns its name.
func archive(b binary, out string) (string, error) {
	name := fmt.Sprintf("cairn_%s_%s_%s.tar.gz", b.stamp.fileVersion(), b.goos, b.goarch)
	data, err := os.ReadFile(b.path)
	if err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(out, name))
	if err != nil {
		return "", err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{Name: "cairn", Mode: 0o755, Size: int64(len(data)), ModTime: b.stamp.Time, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return "", err
	}
	if _, err := tw.Write(data); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return name, f.Close()
}
