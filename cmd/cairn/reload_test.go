package main

import "testing"

func TestReload(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/reload": {}})
	stdout, stderr, code := runCLI(t, "reload", "-http-addr", agent.URL)
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "Configuration reload triggered\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	agent.only(t, "PUT", "/v1/agent/reload")
}

func TestReloadRefused(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/reload": {status: 400,
		body: `{"error": "log_level: \"loud\" is not one of debug, info, warn, error", "field": "log_level"}`}})
	stdout, stderr, code := runCLI(t, "reload", "-http-addr", agent.URL)
	wantError(t, stderr, code, `reload: agent returned 400: log_level: "loud" is not one of debug, info, warn, error`)
	if stdout != "" {
		t.Errorf("got stdout %q, want none", stdout)
	}
	_, stderr, code = runCLI(t, "reload", "-http-addr", agent.URL, "now")
	wantUsage(t, stderr, code, `unexpected argument "now"`)
}
