// Command release builds cairn's release artifacts into a directory:
// static binaries for each platform (tar.gz), .deb packages for linux
// amd64 and arm64, a container image (a docker-loadable tarball per
// architecture and an OCI layout holding both), and SHA256SUMS.
//
//	go -C build/release run . [-out DIR]
//
// It is a module of its own so that the packaging libraries (nfpm,
// go-containerregistry) and what they pull in stay out of the agent's
// go.mod. Nothing is fetched at build time beyond the Go module proxy.
// The version comes from the Go toolchain's VCS stamping (the git tag at
// HEAD, else a pseudo-version), so it must run in a git clone: the go
// command does not stamp builds in a git worktree.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("out", "", "write the artifacts into `DIR` (default: dist/ in the repository)")
	repo := flag.String("repo", "", "the cairn repository `DIR` (default: the git work tree around the current directory)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), *repo, *out, logger); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, repo, out string, logger *slog.Logger) error {
	if repo == "" {
		top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return fmt.Errorf("find the repository (git rev-parse --show-toplevel): %w", err)
		}
		repo = strings.TrimSpace(string(top))
	}
	if out == "" {
		out = filepath.Join(repo, "dist")
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return fmt.Errorf("clear %s: %w", out, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	bins, err := buildAll(ctx, repo, out, logger)
	if err != nil {
		return err
	}
	stamp := bins[0].stamp
	var artifacts []string
	for _, b := range bins {
		name, err := archive(b, out)
		if err != nil {
			return err
		}
		artifacts = append(artifacts, name)
	}
	for _, b := range bins {
		if b.goos != "linux" {
			continue
		}
		name, err := buildDeb(b, out)
		if err != nil {
			return err
		}
		logger.Info("deb", "file", name)
		artifacts = append(artifacts, name)
	}
	images, err := buildImages(bins, stamp, out)
	if err != nil {
		return err
	}
	artifacts = append(artifacts, images...)
	if err := writeSums(out, artifacts); err != nil {
		return err
	}
	logger.Info("release artifacts written", "dir", out, "version", stamp.Version, "revision", stamp.Revision)
	return nil
}
