package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestRootCause(t *testing.T) {
	wrap := func(inner error) error {
		return &url.Error{Op: "Put", URL: "http://h:8500/v1/agent/service/register",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: inner}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wrap(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused"},
		{wrap(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "no route to host"},
		{wrap(&net.DNSError{Err: "no such host", Name: "agent.invalid", IsNotFound: true}), `no such host "agent.invalid"`},
		{wrap(&net.DNSError{Err: "server misbehaving", Name: "agent.example"}), "lookup agent.example: server misbehaving"},
		{&url.Error{Op: "Get", URL: "http://h", Err: context.DeadlineExceeded}, "timed out"},
		{&url.Error{Op: "Get", URL: "http://h", Err: fmt.Errorf("read: %w", errors.New("tls: bad\ncertificate"))}, "tls: bad certificate"},
	} {
		if got := rootCause(tc.err); got != tc.want {
			t.Errorf("rootCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	long := strings.Repeat("é", 400)
	got := oneLine(long)
	if !strings.HasSuffix(got, "…") || len(got) > 305 {
		t.Errorf("oneLine of %d bytes gave %d bytes, want at most ~300 ending in …", len(long), len(got))
	}
	if !strings.HasPrefix(got, "éé") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("oneLine cut a rune in half: %q", got[:10])
	}
}
