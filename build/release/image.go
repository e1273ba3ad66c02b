package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's non-root user (distroless's "nonroot" numbers) and the
// ports it exposes: HTTP, DNS, server RPC, LAN and WAN gossip.
const (
	imageUID  = 65532
	imageUser = "65532:65532"
)

var exposedPorts = []string{"8500/tcp", "8600/udp", "8600/tcp", "8300/tcp", "8301/tcp", "8301/udp", "8302/tcp", "8302/udp"}

// imageEntrypoint runs the agent on the image's config directory; the
// default command makes a plain "docker run" a dev agent, and any
// arguments given replace it.
var (
	imageEntrypoint = []string{"/usr/bin/cairn", "agent", "-config-dir=/etc/cairn.d"}
	imageCmd        = []string{"-dev"}
)

// imageTag is the name "docker load" gives the image: a tag may not hold
// the "+" of "+dirty".
func imageTag(version string) string {
	return "cairn:" + strings.ReplaceAll(version, "+", "-")
}

// buildImages writes, for each linux binary, a tarball "docker load" and
// "podman load" read (cairn_<version>_image_linux_<arch>.tar), and an OCI
// layout holding all of them under one index (cairn_<version>_oci/), which
// crane or skopeo push as one multi-architecture image. It returns the
// tarballs' names.
func buildImages(bins []binary, s stamp, out string) ([]string, error) {
	tag, err := name.NewTag(imageTag(s.Version))
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var names []string
	for _, b := range bins {
		if b.goos != "linux" {
			continue
		}
		img, err := buildImage(b.path, b.goarch, s)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", b.goarch, err)
		}
		n := fmt.Sprintf("cairn_%s_image_linux_%s.tar", s.fileVersion(), b.goarch)
		if err := tarball.WriteToFile(filepath.Join(out, n), tag, img); err != nil {
			return nil, fmt.Errorf("image %s: %w", n, err)
		}
		names = append(names, n)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: b.goarch}},
		})
	}
	dir := filepath.Join(out, fmt.Sprintf("cairn_%s_oci", s.fileVersion()))
	if _, err := layout.Write(dir, idx); err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return names, nil
}

// buildImage makes a one-layer image of the static binary at bin: no
// shell, no package manager, a user and group file naming the non-root
// user it runs as, its data and config directories.
func buildImage(bin, arch string, s stamp) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	conf, err := packageFiles.ReadFile("files/container.hcl")
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(data, conf, s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Time}, CreatedBy: "build/release", Comment: "cairn " + s.Version,
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: s.Time}
	ports := map[string]struct{}{}
	for _, p := range exposedPorts {
		ports[p] = struct{}{}
	}
	cf.Config = v1.Config{
		Entrypoint:   imageEntrypoint,
		Cmd:          imageCmd,
		User:         imageUser,
		WorkingDir:   "/var/lib/cairn",
		Env:          []string{"PATH=/usr/bin"},
		ExposedPorts: ports,
		Volumes:      map[string]struct{}{"/var/lib/cairn": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "cairn",
			"org.opencontainers.image.version":  s.Version,
			"org.opencontainers.image.revision": s.Revision,
			"org.opencontainers.image.created":  s.Time.UTC().Format("2006-01-02T15:04:05Z"),
			"org.opencontainers.image.source":   "https://github.com/cairndns/cairn",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the image's one layer, as a tar.
func rootfs(bin, conf []byte, s stamp) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: s.Time, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: s.Time, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\ncairn:x:%d:%d:cairn agent:/var/lib/cairn:/sbin/nologin\n", imageUID, imageUID))
		},
		func() error { return file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\ncairn:x:%d:\n", imageUID)) },
		// Go's resolver reads it for the order of /etc/hosts and DNS.
		func() error { return file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")) },
		func() error { return dir("etc/cairn.d", 0o755, 0) },
		func() error { return file("etc/cairn.d/cairn.hcl", 0o644, conf) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/bin", 0o755, 0) },
		func() error { return file("usr/bin/cairn", 0o755, bin) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		func() error { return dir("var/lib/cairn", 0o750, imageUID) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
