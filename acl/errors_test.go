package acl

import (
	"errors"
	"fmt"
	"regexp"
	"testing"
)

func TestPermissionDeniedError(t *testing.T) {
	tests := []struct {
		err  *PermissionDeniedError
		want string
	}{
		{&PermissionDeniedError{Resource: "service", Access: "write", Segment: "web"},
			`Permission denied: token lacks service:write on "web"`},
		{&PermissionDeniedError{Resource: "key", Access: "list", Segment: ""},
			`Permission denied: token lacks key:list on ""`},
		{&PermissionDeniedError{Resource: "operator", Access: "read"},
			`Permission denied: token lacks operator:read`},
		{&PermissionDeniedError{Resource: "acl", Access: "write", AccessorID: "1234-abcd"},
			`Permission denied: token 1234-abcd lacks acl:write`},
		{&PermissionDeniedError{Resource: "node", Access: "read", Segment: "n1", AccessorID: "1234"},
			`Permission denied: token 1234 lacks node:read on "n1"`},
		{DeniedAny("service", "write").(*PermissionDeniedError),
			`Permission denied: token lacks service:write on any service`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error(): got %s, want %s", got, tt.want)
		}
	}
}

func TestDeniedIs(t *testing.T) {
	err := fmt.Errorf("register service %q: %w", "web", Denied("service", "write", "web"))
	if !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("errors.Is(%v, ErrPermissionDenied): got false, want true", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound): got true, want false", err)
	}
	var pd *PermissionDeniedError
	if !errors.As(err, &pd) {
		t.Fatalf("errors.As(%v): got false, want true", err)
	}
	pd.AccessorID = "abc"
	if got, want := pd.Error(), `Permission denied: token abc lacks service:write on "web"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := ErrNotFound.Error(), "ACL not found"; got != want {
		t.Errorf("ErrNotFound: got %q, want %q", got, want)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewID()
		if err != nil {
			t.Fatalf("NewID: %v", err)
		}
		if !uuidRE.MatchString(id) {
			t.Fatalf("NewID: got %q, want a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID: got %q twice", id)
		}
		seen[id] = true
	}
}

func TestHashSecret(t *testing.T) {
	// sha256("abc"), FIPS 180-2 test vector.
	want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := HashSecret("abc"); got != want {
		t.Errorf("HashSecret(abc): got %s, want %s", got, want)
	}
}

func TestResourceAndAccessNames(t *testing.T) {
	for kw, k := range keywords {
		want := k.res.String()
		if k.prefix {
			want += "_prefix"
		}
		if kw != want {
			t.Errorf("keyword of %v (prefix %v): got %q, want %q", k.res, k.prefix, kw, want)
		}
	}
	if got := Resource(0).String(); got != "unknown" {
		t.Errorf("Resource(0): got %q, want unknown", got)
	}
	for a, want := range map[Access]string{AccessNone: "none", AccessRead: "read", AccessList: "list", AccessWrite: "write", AccessDeny: "deny", 9: "unknown"} {
		if got := a.String(); got != want {
			t.Errorf("Access(%d): got %q, want %q", a, got, want)
		}
	}
}

func TestTokenContext(t *testing.T) {
	ctx := t.Context()
	if got := TokenFromContext(ctx); got != "" {
		t.Errorf("empty context: got %q, want empty", got)
	}
	ctx = ContextWithToken(ctx, "secret")
	if got := TokenFromContext(ctx); got != "secret" {
		t.Errorf("got %q, want secret", got)
	}
}
