package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestBinariesStatic checks the binaries of a built release (CI's, in
// $CAIRN_RELEASE_DIST): the linux ones need no dynamic loader or
// library, and each was built without cgo, with -trimpath, and stamped
// with the same version and revision.
func TestBinariesStatic(t *testing.T) {
	dir := os.Getenv(distEnv)
	if dir == "" {
		t.Skip("set " + distEnv + " to a directory the release tool wrote")
	}
	var first stamp
	for i, tg := range targets {
		path := filepath.Join(dir, "bin", tg.goos+"_"+tg.goarch, "cairn")
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": tg.goos, "GOARCH": tg.goarch} {
			if settings[k] != want {
				t.Errorf("%s: build setting %s=%q, want %q", path, k, settings[k], want)
			}
		}
		s, err := readStamp(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = s
		} else if s != first {
			t.Errorf("%s: stamped %+v, %s/%s %+v", path, s, targets[0].goos, targets[0].goarch, first)
		}
		if tg.goos != "linux" {
			continue
		}
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: has a %v program header: not static", path, p.Type)
			}
		}
		f.Close()
	}
}
