package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// checkRemote compares what newRemoteError made of a text with what it
// should have made.
func checkRemote(t *testing.T, what string, got *RemoteError, wantMsg string, wantField *catalog.FieldError, wantSentinel error) {
	t.Helper()
	if got.Message != wantMsg {
		t.Errorf("%s: got message %q, want %q", what, got.Message, wantMsg)
	}
	if got.Error() != wantMsg {
		t.Errorf("%s: got Error() %q, want %q", what, got.Error(), wantMsg)
	}
	switch {
	case wantField == nil && got.FieldError != nil:
		t.Errorf("%s: got field error %+v, want none", what, *got.FieldError)
	case wantField != nil && (got.FieldError == nil || *got.FieldError != *wantField):
		t.Errorf("%s: got field error %+v, want %+v", what, got.FieldError, *wantField)
	}
	if got.Sentinel != wantSentinel {
		t.Errorf("%s: got sentinel %v, want %v", what, got.Sentinel, wantSentinel)
	}
	fe, isField := errors.AsType[*catalog.FieldError](got)
	if isField != (wantField != nil) || (isField && *fe != *wantField) {
		t.Errorf("%s: errors.As found field error %v (%v), want %v", what, fe, isField, wantField)
	}
	if wantSentinel != nil && !errors.Is(got, wantSentinel) {
		t.Errorf("%s: errors.Is(%v) is false", what, wantSentinel)
	}
}

func TestWireErrorRoundTrip(t *testing.T) {
	port := &catalog.FieldError{Field: "Service.Port", Reason: "must be 1-65535"}
	odd := &catalog.FieldError{Field: "Meta[a \"b\": c\n]", Reason: "key must be \"x\": no \x00, \xff or ' '"}
	plain := errors.New("raft apply: timed out")
	for _, tc := range []struct {
		name      string
		err       error
		wantMsg   string
		wantField *catalog.FieldError
		wantSent  error
	}{
		{"field error", port, "Service.Port: must be 1-65535", port, nil},
		{"wrapped field error", fmt.Errorf("register node %q: %w", "n1", port), `register node "n1": Service.Port: must be 1-65535`, port, nil},
		{"separators, quotes, newline and bad UTF-8", odd, odd.Error(), odd, nil},
		{"empty field", &catalog.FieldError{Reason: "is wrong"}, ": is wrong", &catalog.FieldError{Reason: "is wrong"}, nil},
		{"not found", fmt.Errorf("register node %q: node %q: %w", "n1", "n1", catalog.ErrNotFound), `register node "n1": node "n1": not found`, nil, catalog.ErrNotFound},
		{"conflicting consistency", ErrConflictingConsistency, ErrConflictingConsistency.Error(), nil, ErrConflictingConsistency},
		{"no path to datacenter", fmt.Errorf("%w dc9", ErrNoPathToDatacenter), "no path to datacenter dc9", nil, ErrNoPathToDatacenter},
		{"unknown datacenter", fmt.Errorf("%w %q", ErrUnknownDatacenter, "dc9"), `unknown datacenter "dc9"`, nil, ErrUnknownDatacenter},
		{"rate limited", fmt.Errorf("rpc: Echo.Write from 10.0.0.1: %w", ErrRateLimited), "rpc: Echo.Write from 10.0.0.1: rate limit exceeded", nil, ErrRateLimited},
		{"too many calls", fmt.Errorf("rpc: 3 calls in flight from 10.0.0.1: %w", ErrTooManyCalls), "rpc: 3 calls in flight from 10.0.0.1: too many calls in flight from this client", nil, ErrTooManyCalls},
		{"field error wins over a sentinel", errors.Join(catalog.ErrNotFound, port), "not found\nService.Port: must be 1-65535", port, nil},
		{"plain", plain, plain.Error(), nil, nil},
		{"plain text that looks encoded", errors.New(wireMarker + `field "Port" "x" y`), wireMarker + `field "Port" "x" y`, nil, nil},
		{"plain text that is the marker", errors.New(strings.TrimSpace(wireMarker) + " "), wireMarker, nil, nil},
	} {
		wire := WireError(tc.err)
		if !errors.Is(wire, tc.err) {
			t.Errorf("%s: WireError does not unwrap to the original", tc.name)
		}
		got := newRemoteError(wire.Error())
		checkRemote(t, tc.name, got, tc.wantMsg, tc.wantField, tc.wantSent)

		// A server that forwarded the request to the leader returns the
		// leader's RemoteError through WireError again: nothing is lost.
		again := newRemoteError(WireError(got).Error())
		checkRemote(t, tc.name+", second hop", again, tc.wantMsg, tc.wantField, tc.wantSent)
	}

	if WireError(nil) != nil {
		t.Error("WireError(nil): got an error, want nil")
	}
	if WireError(plain) != plain {
		t.Error("WireError(plain): want the error itself")
	}
	// net/rpc would send an empty error text as success.
	if got := WireError(errors.New("")).Error(); got == "" {
		t.Error("WireError of an error without text: got empty text")
	}
}

func TestRemoteErrorParsesOddInputs(t *testing.T) {
	m := wireMarker
	for _, tc := range []struct {
		text      string
		wantMsg   string
		wantField *catalog.FieldError
		wantSent  error
	}{
		// Not encoded, or malformed: the whole text, no structure.
		{"", "", nil, nil},
		{"can't find method", "can't find method", nil, nil},
		{m, m, nil, nil},
		{m + "field", m + "field", nil, nil},
		{m + "field ", m + "field ", nil, nil},
		{m + `field "Port`, m + `field "Port`, nil, nil},                       // truncated field
		{m + `field "Port"`, m + `field "Port"`, nil, nil},                     // no reason
		{m + `field "Port" "must`, m + `field "Port" "must`, nil, nil},         // truncated reason
		{m + `field "Port""must" x`, m + `field "Port""must" x`, nil, nil},     // no space
		{m + `field "Port" "must"x`, m + `field "Port" "must"x`, nil, nil},     // no space before the message
		{m + `field 'P' "must" x`, m + `field 'P' "must" x`, nil, nil},         // not double-quoted
		{m + "field `P` \"must\" x", m + "field `P` \"must\" x", nil, nil},     // raw string
		{m + `field "P\q" "must" x`, m + `field "P\q" "must" x`, nil, nil},     // bad escape
		{m + `field Port "must" x`, m + `field Port "must" x`, nil, nil},       // unquoted
		{m + `field  "Port" "must" x`, m + `field  "Port" "must" x`, nil, nil}, // two spaces
		{m + "is", m + "is", nil, nil},
		{m + "is ", m + "is ", nil, nil},
		{m + "is future-code", m + "is future-code", nil, nil},
		{m + "text", m + "text", nil, nil},
		{m + "text ", m + "text ", nil, nil},
		{m + "future stuff", m + "future stuff", nil, nil},
		{"cairn-error/2 is not-found x", "cairn-error/2 is not-found x", nil, nil},
		{" " + m + "is not-found x", " " + m + "is not-found x", nil, nil},

		// Well-formed.
		{m + `field "" "is wrong" : is wrong`, ": is wrong", &catalog.FieldError{Reason: "is wrong"}, nil},
		{m + `field "Port" "" Port: `, "Port: ", &catalog.FieldError{Field: "Port"}, nil},
		{m + `field "Port" "must be 1-65535"`, "Port: must be 1-65535", &catalog.FieldError{Field: "Port", Reason: "must be 1-65535"}, nil},
		{m + `field "Port" "must be 1-65535" `, "Port: must be 1-65535", &catalog.FieldError{Field: "Port", Reason: "must be 1-65535"}, nil},
		{m + `field "a b" "c \"d\" e: f" g: h`, "g: h", &catalog.FieldError{Field: "a b", Reason: `c "d" e: f`}, nil},
		{m + `field "x" "y" ` + m + "is not-found z", m + "is not-found z", &catalog.FieldError{Field: "x", Reason: "y"}, nil},
		{m + `field "\u00e9\xff" "\n" msg`, "msg", &catalog.FieldError{Field: "é\xff", Reason: "\n"}, nil},
		{m + "is not-found", "not found", nil, catalog.ErrNotFound},
		{m + `is not-found node "n1": not found`, `node "n1": not found`, nil, catalog.ErrNotFound},
		{m + "is future-code it broke", "it broke", nil, nil},
		{m + "text " + m + "is not-found x", m + "is not-found x", nil, nil},
	} {
		checkRemote(t, fmt.Sprintf("%q", tc.text), newRemoteError(tc.text), tc.wantMsg, tc.wantField, tc.wantSent)
	}
}

// Wire is a service whose methods fail as an endpoint does, through
// WireError.
type Wire struct{}

func (Wire) Field(_ context.Context, args *EchoArgs, _ *EchoReply) error {
	return WireError(fmt.Errorf("register node %q: %w", "n1", &catalog.FieldError{Field: args.Fail, Reason: "is bad"}))
}

func (Wire) NotFound(_ context.Context, args *EchoArgs, _ *EchoReply) error {
	return WireError(fmt.Errorf("node %q: %w", args.Fail, catalog.ErrNotFound))
}

// TestWireErrorThroughPool checks the decoding in the codec: what Pool.Call
// returns is a RemoteError that errors.As and errors.Is see through.
func TestWireErrorThroughPool(t *testing.T) {
	s, _ := startServer(t, testConfig())
	if err := s.Register("Wire", Wire{}); err != nil {
		t.Fatal(err)
	}
	p, _ := newPool(t)
	addr := s.Addr().String()

	err := p.Call(testCtx(t), addr, "Wire.Field", &EchoArgs{Fail: `Meta["a b"]`}, &EchoReply{})
	remote, ok := errors.AsType[*RemoteError](err)
	if !ok {
		t.Fatalf("got %v, want a RemoteError", err)
	}
	if want := `register node "n1": Meta["a b"]: is bad`; remote.Message != want {
		t.Errorf("got message %q, want %q", remote.Message, want)
	}
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != `Meta["a b"]` || fe.Reason != "is bad" {
		t.Errorf("errors.As FieldError: got %v (%v), want Meta[\"a b\"] is bad", fe, ok)
	}
	if errors.Is(err, ErrTransport) {
		t.Errorf("%v wraps ErrTransport", err)
	}

	err = p.Call(testCtx(t), addr, "Wire.NotFound", &EchoArgs{Fail: "n9"}, &EchoReply{})
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("got %v, want it to wrap catalog.ErrNotFound", err)
	}
	if strings.Contains(err.Error(), wireMarker) {
		t.Errorf("got text %q, want it without the wire encoding", err)
	}
}

func FuzzRemoteError(f *testing.F) {
	for _, s := range []string{
		"", "plain", wireMarker, wireMarker + `field "a" "b" c`, wireMarker + `field "" "" `,
		wireMarker + "is not-found x", wireMarker + "is nope", wireMarker + "text x",
		wireMarker + `field "a\` + "\n", wireMarker + `field "\xff" "\u2028" m`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := newRemoteError(text)
		if text == "" {
			return
		}
		if got.Message == "" {
			t.Fatalf("%q: got an empty message", text)
		}
		if got.FieldError != nil && got.Sentinel != nil {
			t.Fatalf("%q: got both a field error and a sentinel", text)
		}
		// Encoding what was decoded and decoding it again changes
		// nothing: the second hop of a forwarded request.
		again := newRemoteError(WireError(got).Error())
		if again.Message != got.Message || again.Sentinel != got.Sentinel ||
			(again.FieldError == nil) != (got.FieldError == nil) ||
			(got.FieldError != nil && *again.FieldError != *got.FieldError) {
			t.Fatalf("%q: decoded %+v, then %+v after another hop", text, got, again)
		}
	})
}

func FuzzWireErrorField(f *testing.F) {
	f.Add("Service.Port", "must be 1-65535", "register node")
	f.Add("", "", "")
	f.Add(`Meta["x" y]`, "a: b \"c\"", "\xff")
	f.Fuzz(func(t *testing.T, field, reason, context string) {
		want := &catalog.FieldError{Field: field, Reason: reason}
		err := fmt.Errorf("%s%w", context, want)
		got := newRemoteError(WireError(err).Error())
		if got.Message != err.Error() || got.FieldError == nil || *got.FieldError != *want {
			t.Fatalf("got %+v (field %v), want message %q and field %+v", got, got.FieldError, err.Error(), want)
		}
	})
}
