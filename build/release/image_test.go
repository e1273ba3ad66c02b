package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageLayout opens each image as "docker load" would (the tarball)
// and as a registry push would (the OCI layout), and checks what a
// container gets: the entrypoint, the non-root user, the ports, the
// volume, the labels, and the files of its one layer.
func TestImageLayout(t *testing.T) {
	r := testRelease(t)
	tag, err := name.NewTag(imageTag(r.stamp.Version))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(r.dir, fmt.Sprintf("cairn_%s_oci", r.stamp.fileVersion())))
	if err != nil {
		t.Fatalf("open OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		if m.Platform != nil {
			platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		}
	}
	slices.Sort(platforms)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("OCI index platforms: got %v, want %v", platforms, want)
	}

	for arch, bin := range r.bins {
		path := filepath.Join(r.dir, fmt.Sprintf("cairn_%s_image_linux_%s.tar", r.stamp.fileVersion(), arch))
		loaded, err := tarball.ImageFromPath(path, &tag)
		if err != nil {
			t.Fatalf("open %s as %s: %v", path, tag, err)
		}
		// The tarball keeps the config as it is and rebuilds the manifest
		// in Docker's media types, so the two share the config's digest.
		pushed := imageByConfig(t, idx, loaded)
		if pushed == nil {
			t.Errorf("%s: the image in %s is not in the OCI layout", arch, path)
		}
		for what, img := range map[string]v1.Image{"tarball": loaded, "layout": pushed} {
			if img != nil {
				checkImage(t, fmt.Sprintf("%s %s", arch, what), img, arch, bin, r.stamp)
			}
		}
	}
}

// imageByConfig returns the image of idx with img's config, or nil.
func imageByConfig(t *testing.T, idx v1.ImageIndex, img v1.Image) v1.Image {
	t.Helper()
	want, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		cand, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := cand.ConfigName(); err == nil && got == want {
			return cand
		}
	}
	return nil
}

func checkImage(t *testing.T, what string, img v1.Image, arch, bin string, s stamp) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("%s: platform %s/%s, want linux/%s", what, cf.OS, cf.Architecture, arch)
	}
	if want := []string{"/usr/bin/cairn", "agent", "-config-dir=/etc/cairn.d"}; !slices.Equal(c.Entrypoint, want) {
		t.Errorf("%s: entrypoint %q, want %q", what, c.Entrypoint, want)
	}
	if want := []string{"-dev"}; !slices.Equal(c.Cmd, want) {
		t.Errorf("%s: cmd %q, want %q", what, c.Cmd, want)
	}
	if c.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532 (not root)", what, c.User)
	}
	for _, p := range []string{"8500/tcp", "8600/udp", "8600/tcp", "8300/tcp", "8301/tcp", "8301/udp", "8302/tcp", "8302/udp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("%s: port %s not exposed (have %v)", what, p, c.ExposedPorts)
		}
	}
	if _, ok := c.Volumes["/var/lib/cairn"]; !ok {
		t.Errorf("%s: /var/lib/cairn is not a volume (have %v)", what, c.Volumes)
	}
	if got := c.Labels["org.opencontainers.image.version"]; got != s.Version {
		t.Errorf("%s: version label %q, want %q", what, got, s.Version)
	}
	if got := c.Labels["org.opencontainers.image.revision"]; got != s.Revision {
		t.Errorf("%s: revision label %q, want %q", what, got, s.Revision)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want 1", what, len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := readTar(t, rc, false)
	wantBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := packageFiles.ReadFile("files/container.hcl")
	if e := files["usr/bin/cairn"]; !bytes.Equal(e.data, wantBin) || e.hdr.Mode&0o111 == 0 {
		t.Errorf("%s: /usr/bin/cairn missing, not the linux/%s binary, or not executable", what, arch)
	}
	if e := files["etc/cairn.d/cairn.hcl"]; !bytes.Equal(e.data, conf) {
		t.Errorf("%s: /etc/cairn.d/cairn.hcl is not files/container.hcl", what)
	}
	if e, ok := files["var/lib/cairn"]; !ok || e.hdr.Uid != 65532 || e.hdr.Gid != 65532 || e.hdr.Mode&0o7777 != 0o750 {
		t.Errorf("%s: /var/lib/cairn missing, or not 0750 owned by 65532:65532 (%+v)", what, e.hdr)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "cairn:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd names no cairn user 65532:\n%s", what, files["etc/passwd"].data)
	}
	for n := range files {
		if strings.HasPrefix(n, "bin") || strings.HasPrefix(n, "sbin") || n == "usr/bin/sh" {
			t.Errorf("%s: has %s; the image holds only cairn", what, n)
		}
	}
}
