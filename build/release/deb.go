package main

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// packageFiles are the files the .deb and the image install beside the
// binary, and the .deb's maintainer scripts.
//
//go:embed files
var packageFiles embed.FS

// debVersion turns a Go module version into a Debian one that sorts the
// same way: a pre-release or pseudo-version sorts before its release
// ("~"), and has no "-", which dpkg would take for a Debian revision.
func debVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	v, meta, hasMeta := strings.Cut(v, "+")
	base, pre, hasPre := strings.Cut(v, "-")
	if hasPre {
		base += "~" + strings.ReplaceAll(pre, "-", ".")
	}
	if hasMeta {
		base += "+" + meta
	}
	return base
}

// debName is the .deb's file name for a version and architecture.
func debName(version, arch string) string {
	return fmt.Sprintf("cairn_%s_%s.deb", debVersion(version), arch)
}

// buildDeb writes the .deb of a linux binary into out and returns its name.
func buildDeb(b binary, out string) (string, error) {
	staging, err := os.MkdirTemp("", "cairn-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	for _, f := range []string{"cairn.service", "cairn.hcl", "postinst", "prerm", "postrm"} {
		data, err := packageFiles.ReadFile("files/" + f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(staging, f), data, 0o755); err != nil {
			return "", err
		}
	}
	src := func(name string) string { return filepath.Join(staging, name) }
	mode := func(m os.FileMode) *files.ContentFileInfo {
		return &files.ContentFileInfo{Owner: "root", Group: "root", Mode: m, MTime: b.stamp.Time}
	}
	info := &nfpm.Info{
		Name:          "cairn",
		Arch:          b.goarch,
		Platform:      "linux",
		Version:       debVersion(b.stamp.Version),
		VersionSchema: "none", // debVersion has done what nfpm's semver parsing would
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "cairn developers <noreply@cairndns.invalid>",
		Description: "DNS-centric service discovery (a Consul-alike)\n" +
			"Every machine runs one cairn agent, which answers DNS for the services of\n" +
			"the cluster; a few agents per datacenter are servers holding the catalog\n" +
			"in Raft. The HTTP API keeps Consul's /v1 shapes.",
		Vendor:   "cairn",
		Homepage: "https://github.com/cairndns/cairn",
		MTime:    b.stamp.Time,
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				{Source: b.path, Destination: "/usr/bin/cairn", FileInfo: mode(0o755)},
				{Source: src("cairn.service"), Destination: "/lib/systemd/system/cairn.service", FileInfo: mode(0o644)},
				// A conffile: dpkg keeps the admin's edits on upgrade.
				{Source: src("cairn.hcl"), Destination: "/etc/cairn.d/cairn.hcl", Type: files.TypeConfigNoReplace, FileInfo: mode(0o640)},
				// Owned by root in the archive (the cairn user does not
				// exist yet); postinst gives them to cairn.
				{Destination: "/etc/cairn.d", Type: files.TypeDir, FileInfo: mode(0o750)},
				{Destination: "/var/lib/cairn", Type: files.TypeDir, FileInfo: mode(0o750)},
			},
			Scripts: nfpm.Scripts{
				PostInstall: src("postinst"),
				PreRemove:   src("prerm"),
				PostRemove:  src("postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("deb %s: %w", b.goarch, err)
	}
	name := debName(b.stamp.Version, b.goarch)
	f, err := os.Create(filepath.Join(out, name))
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := deb.Default.Package(info, f); err != nil {
		return "", fmt.Errorf("deb %s: %w", b.goarch, err)
	}
	return name, f.Close()
}
