package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// distEnv names a directory the release tool wrote; the tests then check
// its artifacts (CI sets it after building them). Unset, they build the
// packages from a stand-in binary.
const distEnv = "CAIRN_RELEASE_DIST"

// release is what the tests check: the artifacts of one version, with
// the linux binaries they were made of.
type release struct {
	dir   string
	stamp stamp
	bins  map[string]string // arch → linux binary
}

// testRelease returns the release in $CAIRN_RELEASE_DIST, or one whose
// .debs and images the tool made in a temporary directory from stand-in
// binaries.
func testRelease(t *testing.T) release {
	t.Helper()
	if dir := os.Getenv(distEnv); dir != "" {
		r := release{dir: dir, bins: map[string]string{}}
		for _, arch := range []string{"amd64", "arm64"} {
			r.bins[arch] = filepath.Join(dir, "bin", "linux_"+arch, "cairn")
		}
		s, err := readStamp(r.bins["amd64"])
		if err != nil {
			t.Fatal(err)
		}
		r.stamp = s
		return r
	}
	dir := t.TempDir()
	r := release{dir: dir, bins: map[string]string{}, stamp: stamp{
		Version:  "v0.2.1-0.20261128003000-0123456789ab",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Time:     time.Date(2026, 11, 28, 0, 30, 0, 0, time.UTC),
	}}
	var bins []binary
	for _, arch := range []string{"amd64", "arm64"} {
		path := filepath.Join(dir, "bin", "linux_"+arch, "cairn")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("stand-in cairn for "+arch+" "+rand.Text()), 0o755); err != nil {
			t.Fatal(err)
		}
		r.bins[arch] = path
		b := binary{goos: "linux", goarch: arch, path: path, stamp: r.stamp}
		bins = append(bins, b)
		if _, err := buildDeb(b, dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := buildImages(bins, r.stamp, dir); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDebVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v0.1.0", "0.1.0"},
		{"v0.1.1-0.20261128003000-0123456789ab", "0.1.1~0.20261128003000.0123456789ab"},
		{"v0.1.1-0.20261128003000-0123456789ab+dirty", "0.1.1~0.20261128003000.0123456789ab+dirty"},
		{"v1.0.0-rc.1", "1.0.0~rc.1"},
	} {
		if got := debVersion(tc.in); got != tc.want {
			t.Errorf("debVersion(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
	// dpkg must order them as Go does: a pseudo-version after the tag it
	// follows and before the next release, a release candidate before
	// its release.
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Skip("no dpkg to compare versions with")
	}
	for _, pair := range [][2]string{
		{"v0.1.0", "v0.1.1-0.20261128003000-0123456789ab"},
		{"v0.1.1-0.20261128003000-0123456789ab", "v0.1.1"},
		{"v1.0.0-rc.1", "v1.0.0"},
	} {
		if err := exec.Command(dpkg, "--compare-versions", debVersion(pair[0]), "lt", debVersion(pair[1])).Run(); err != nil {
			t.Errorf("dpkg: %s (%s) is not older than %s (%s)", debVersion(pair[0]), pair[0], debVersion(pair[1]), pair[1])
		}
	}
}

// arMembers reads the members of an ar archive, the .deb's outer format.
func arMembers(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(data, []byte(magic)) {
		t.Fatalf("not an ar archive: starts %q", data[:min(8, len(data))])
	}
	members := map[string][]byte{}
	for rest := data[len(magic):]; len(rest) >= 60; {
		hdr := rest[:60]
		name := strings.TrimSuffix(strings.TrimSpace(string(hdr[:16])), "/")
		size, err := strconv.Atoi(strings.TrimSpace(string(hdr[48:58])))
		if err != nil || 60+size > len(rest) {
			t.Fatalf("ar member %q: bad size %q", name, hdr[48:58])
		}
		members[name] = rest[60 : 60+size]
		rest = rest[60+size+size%2:]
	}
	return members
}

// tarEntry is one file of a tar archive.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// readTar reads a tar, gzip-compressed when gz, into entries by name
// ("./" and "/" cut from the front).
func readTar(t *testing.T, r io.Reader, gz bool) map[string]tarEntry {
	t.Helper()
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	entries := map[string]tarEntry{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(hdr.Name, "./"), "/"), "/")
		entries[name] = tarEntry{hdr, data}
	}
}

// TestDebContents opens each .deb and checks what dpkg will install and
// run: the binary, the unit, the config as a conffile, the data
// directory, the maintainer scripts, and control fields.
func TestDebContents(t *testing.T) {
	r := testRelease(t)
	for arch, bin := range r.bins {
		name := debName(r.stamp.Version, arch)
		data, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ar := arMembers(t, data)
		if got := string(ar["debian-binary"]); got != "2.0\n" {
			t.Errorf("%s: debian-binary %q, want \"2.0\\n\"", name, got)
		}
		control := readTar(t, bytes.NewReader(ar["control.tar.gz"]), true)
		fields := string(control["control"].data)
		for _, want := range []string{"Package: cairn\n", "Version: " + debVersion(r.stamp.Version) + "\n", "Architecture: " + arch + "\n"} {
			if !strings.Contains(fields, want) {
				t.Errorf("%s: control lacks %q:\n%s", name, want, fields)
			}
		}
		if got := string(control["conffiles"].data); got != "/etc/cairn.d/cairn.hcl\n" {
			t.Errorf("%s: conffiles %q, want only /etc/cairn.d/cairn.hcl", name, got)
		}
		for _, script := range []string{"postinst", "prerm", "postrm"} {
			want, _ := packageFiles.ReadFile("files/" + script)
			if e := control[script]; !bytes.Equal(e.data, want) || e.hdr == nil || e.hdr.Mode&0o111 == 0 {
				t.Errorf("%s: %s missing, different from files/%s, or not executable", name, script, script)
			}
		}

		files := readTar(t, bytes.NewReader(ar["data.tar.gz"]), true)
		wantBin, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		unit, _ := packageFiles.ReadFile("files/cairn.service")
		conf, _ := packageFiles.ReadFile("files/cairn.hcl")
		for _, w := range []struct {
			path string
			mode int64
			data []byte // nil: a directory
		}{
			{"usr/bin/cairn", 0o755, wantBin},
			{"lib/systemd/system/cairn.service", 0o644, unit},
			{"etc/cairn.d/cairn.hcl", 0o640, conf},
			{"etc/cairn.d", 0o750, nil},
			{"var/lib/cairn", 0o750, nil},
		} {
			e, ok := files[w.path]
			switch {
			case !ok:
				t.Errorf("%s: no /%s", name, w.path)
			case e.hdr.Mode&0o7777 != w.mode:
				t.Errorf("%s: /%s mode %o, want %o", name, w.path, e.hdr.Mode&0o7777, w.mode)
			case w.data == nil && e.hdr.Typeflag != tar.TypeDir:
				t.Errorf("%s: /%s is not a directory", name, w.path)
			case w.data != nil && !bytes.Equal(e.data, w.data):
				t.Errorf("%s: /%s differs from what was packaged (%d bytes, want %d)", name, w.path, len(e.data), len(w.data))
			}
		}
	}
}

// TestUnitMatchesPackage: the unit runs the binary the .deb installs, on
// the config directory it installs, and may write to the data_dir that
// config names.
func TestUnitMatchesPackage(t *testing.T) {
	unit, _ := packageFiles.ReadFile("files/cairn.service")
	conf, _ := packageFiles.ReadFile("files/cairn.hcl")
	for _, want := range []string{
		"\nType=notify\n",
		"\nExecStart=/usr/bin/cairn agent -config-dir /etc/cairn.d\n",
		"\nUser=cairn\n",
		"\nReadWritePaths=/var/lib/cairn\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("cairn.service lacks %q", strings.TrimSpace(want))
		}
	}
	if !strings.Contains(string(conf), "\ndata_dir = \"/var/lib/cairn\"\n") {
		t.Errorf("cairn.hcl does not set data_dir to /var/lib/cairn, the unit's only writable directory")
	}
}

// TestSums: SHA256SUMS lists each artifact, sorted, with the digest
// "sha256sum -c" checks.
func TestSums(t *testing.T) {
	dir := t.TempDir()
	content := map[string]string{"b.tar.gz": "artifact b", "a.deb": "artifact a"}
	for n, c := range content {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSums(dir, []string{"b.tar.gz", "a.deb"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, n := range []string{"a.deb", "b.tar.gz"} {
		fmt.Fprintf(&want, "%x  %s\n", sha256.Sum256([]byte(content[n])), n)
	}
	if string(got) != want.String() {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want.String())
	}
}
