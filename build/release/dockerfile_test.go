package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDockerfileMatchesImage: the Dockerfile, which CI cannot build (no
// Docker engine), makes the image the release tool makes: the same
// entrypoint, command, user, ports, volume and config file.
func TestDockerfileMatchesImage(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// The final stage's instructions, by keyword.
	final := map[string]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "FROM ") {
			final = map[string]string{}
		}
		if kw, rest, ok := strings.Cut(line, " "); ok && kw == strings.ToUpper(kw) && !strings.HasPrefix(line, "#") {
			final[kw] = rest
		}
	}
	jsonList := func(kw string) []string {
		var l []string
		if err := json.Unmarshal([]byte(final[kw]), &l); err != nil {
			t.Errorf("Dockerfile %s %q: %v", kw, final[kw], err)
		}
		return l
	}
	if got := jsonList("ENTRYPOINT"); !slices.Equal(got, imageEntrypoint) {
		t.Errorf("Dockerfile ENTRYPOINT %q, the release image's %q", got, imageEntrypoint)
	}
	if got := jsonList("CMD"); !slices.Equal(got, imageCmd) {
		t.Errorf("Dockerfile CMD %q, the release image's %q", got, imageCmd)
	}
	if final["USER"] != imageUser {
		t.Errorf("Dockerfile USER %q, the release image's %q", final["USER"], imageUser)
	}
	if got := strings.Fields(final["EXPOSE"]); !slices.Equal(got, exposedPorts) {
		t.Errorf("Dockerfile EXPOSE %q, the release image's %q", got, exposedPorts)
	}
	if final["VOLUME"] != "/var/lib/cairn" {
		t.Errorf("Dockerfile VOLUME %q, want /var/lib/cairn", final["VOLUME"])
	}
	if !strings.Contains(string(data), "cp build/release/files/container.hcl /rootfs/etc/cairn.d/cairn.hcl") {
		t.Errorf("the Dockerfile does not install build/release/files/container.hcl as /etc/cairn.d/cairn.hcl")
	}
}
