package api_test

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

func TestSessionCreateSendsConsulsBody(t *testing.T) {
	c, seen := kvAgent(t, http.StatusOK, `{"ID":"abc"}`)
	id, err := c.Session().Create(t.Context(), &api.SessionEntry{Name: "n", LockDelay: 2 * time.Second, NodeChecks: []string{}, TTL: "10s"}, nil)
	if err != nil || id != "abc" {
		t.Fatalf("Create: got %q, %v; want abc", id, err)
	}
	got := seen()
	want := []kvRequest{{Method: http.MethodPut, Path: "/v1/session/create", ContentType: "application/json",
		Body: `{"LockDelay":"2s","Name":"n","NodeChecks":[],"TTL":"10s"}`}}
	if len(got) == 1 {
		got[0].Body = trimNewline(got[0].Body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request: got %+v, want %+v", got, want)
	}
}

func trimNewline(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

func TestSessionRenewOfAGoneSessionIsNil(t *testing.T) {
	c, _ := kvAgent(t, http.StatusNotFound, `{"error":"session not found"}`)
	e, err := c.Session().Renew(t.Context(), "abc", nil)
	if err != nil || e != nil {
		t.Errorf("Renew: got %+v, %v; want nil, nil", e, err)
	}
}

func TestKVAcquireAndRelease(t *testing.T) {
	c, seen := kvAgent(t, http.StatusOK, "true")
	p := &api.KVPair{Key: "lock", Value: []byte("me"), Session: "s1"}
	if ok, err := c.KV().Acquire(t.Context(), p, nil); err != nil || !ok {
		t.Errorf("Acquire: got %v, %v", ok, err)
	}
	if ok, err := c.KV().Release(t.Context(), p, nil); err != nil || !ok {
		t.Errorf("Release: got %v, %v", ok, err)
	}
	got := seen()
	if len(got) != 2 || got[0].Query != "acquire=s1" || got[1].Query != "release=s1" || got[0].Body != "me" {
		t.Errorf("requests: got %+v", got)
	}
	if _, err := c.KV().Acquire(t.Context(), &api.KVPair{Key: "lock"}, nil); err == nil {
		t.Error("Acquire without a session: got nil error")
	}
}
