package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/catalog"
)

// ErrTransport is wrapped by every error of Pool.Call that came from
// reaching the server or moving bytes to and from it: the dial, the
// session, the stream, a broken or oversized frame. The call may or may not
// have run on the server; a read can be retried on another server, a write
// has an unknown fate. Errors returned by the remote method are
// *RemoteError instead, and the caller's own context ending is
// context.Canceled or context.DeadlineExceeded; neither wraps ErrTransport.
var ErrTransport = errors.New("rpc transport error")

// ErrNotSent is wrapped, with ErrTransport, by an error of Pool.Call that
// happened before any of the request was written (the dial failed, or the
// session could not open a stream), and with the context's error by a
// call whose context ended while it waited for its session (a new
// session's server had not answered yet): the server cannot have run the
// call.
// A transport error without it leaves a write's fate unknown: the server
// may have applied it before the connection broke.
var ErrNotSent = errors.New("rpc request not sent")

// ErrCodec is wrapped by an error of Pool.Call encoding the arguments or
// decoding the reply: the types on the two sides disagree. Retrying on
// another server does not help.
var ErrCodec = errors.New("rpc codec error")

// ErrMessageTooLarge is wrapped when a message to send or one announced by
// the peer is larger than the configured MaxMessageSize. The stream
// carrying it is closed.
var ErrMessageTooLarge = errors.New("rpc message too large")

// ErrPoolClosed is returned, wrapped, by Pool.Call after Pool.Close.
var ErrPoolClosed = errors.New("rpc pool closed")

// ErrServerClosed is returned, wrapped, by Server.Start after Shutdown and
// by a second Start.
var ErrServerClosed = errors.New("rpc server closed")

// ErrNoPathToDatacenter is wrapped by the error of a request naming a
// datacenter the answering server cannot reach: one no server of which is
// alive in its WAN pool (or known at all), or one whose servers all failed
// to answer. It lives here rather than in consensus so that it crosses the
// wire (WireError gives it a code): a client agent, and a server that
// forwarded the request, can tell it apart from other failures.
var ErrNoPathToDatacenter = errors.New("no path to datacenter")

// ErrUnknownDatacenter is wrapped by the error of a request naming a
// datacenter that is not in the answering server's WAN pool at all (a
// typo, or one that never joined), as opposed to one whose servers are
// all down: sending the request again does not help. It wraps
// ErrNoPathToDatacenter, so that whoever only asks whether a datacenter
// can be reached (a prepared query's failover, a peer of the previous
// release, which knows only that code) reads both alike.
var ErrUnknownDatacenter error = unknownDatacenter{}

type unknownDatacenter struct{}

func (unknownDatacenter) Error() string { return "unknown datacenter" }
func (unknownDatacenter) Unwrap() error { return ErrNoPathToDatacenter }

// ErrRateLimited is wrapped by the error of a write refused because its
// client (its IP address) made more writes than ServerConfig.WriteRate
// and WriteBurst allow. The write did not run: it may be sent again once
// the client slows down. It crosses the wire (WireError gives it a code),
// so errors.Is finds it in what Pool.Call returns.
var ErrRateLimited = errors.New("rate limit exceeded")

// ErrTooManyCalls is wrapped by the error of a call refused because its
// client (its IP address) already had ServerConfig.MaxCallsPerClient
// calls in flight on the server, blocking queries and streams included.
// The call did not run: another server may take it, or this one once the
// client's other calls end. It crosses the wire (WireError gives it a
// code).
var ErrTooManyCalls = errors.New("too many calls in flight from this client")

// ErrUnknownOutcome is wrapped by the error of a write whose request may
// have reached a server that then failed (the connection broke, the
// server hung, or its leader stepped down during the write): it may or
// may not have been applied. A client door returns it only for writes that
// are not idempotent, after the hold ran out for those that are.
var ErrUnknownOutcome = errors.New("the write may or may not have been applied")

// ErrServerStopping is wrapped by the error of a request a server stopped
// working on before it had an answer, while its caller still waited: the
// method's work was cancelled on the server's side (it is shutting down,
// or the endpoint closed, or a forward ran out of the server's own time
// for it or lost the server it went to), not by the caller. It crosses
// the wire, so a client agent tries another server: a read at once, a
// write as one whose fate is unknown (a forward may have reached the
// leader).
var ErrServerStopping = errors.New("the server stopped before answering")

// serverSideCancel wraps ErrServerStopping around a method's error that is
// a cancellation or a deadline, or a transport error the server met on a
// hop of its own: the caller, still waiting for the answer, did not cancel
// it, so the server did, ran out of its own time for it (a forward's
// timeout), or lost the server it asked. Unwrapped, it would reach the
// caller without a code, as an error nothing tells from a bug; as a
// stopped server, a read is tried elsewhere and a write's fate is unknown,
// which is what such a failure means.
func serverSideCancel(err error) error {
	if errors.Is(err, ErrServerStopping) || errors.Is(err, ErrUnknownOutcome) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTransport) {
		return fmt.Errorf("%w: %w", ErrServerStopping, err)
	}
	return err
}

// ErrNoLeader is wrapped by the error of a request that needs the leader
// when the server knew none within its wait (an election under way, or a
// server cut off from the quorum). It crosses the wire, so a client agent
// can try another server.
var ErrNoLeader = errors.New("no raft leader elected")

// ErrNotLeader is wrapped by the error of a request that reached a server
// that does not (or no longer) lead: one forwarded to a server that lost
// leadership meanwhile, or a write whose leader stepped down. It crosses
// the wire.
var ErrNotLeader = errors.New("not the raft leader")

// ErrConflictingConsistency is returned by QueryOptions.Validate when both
// AllowStale and RequireConsistent are set.
var ErrConflictingConsistency = errors.New("AllowStale and RequireConsistent are mutually exclusive")

// RemoteError is an error returned by the remote method (or by the remote
// server, such as an unknown method): the call reached the server and ran,
// or was refused, there. Callers must not retry it on another server as if
// it were a transport error. errors.As recovers it. Server.Call returns
// the same, for the same error, in process.
//
// The wire carries only an error's text, so the server encodes the errors
// a caller branches on into that text (WireError) and the calling side
// decodes them back here: a *catalog.FieldError as FieldError, a well-known
// sentinel (catalog.ErrNotFound, ErrConflictingConsistency,
// ErrNoPathToDatacenter, ErrRateLimited) as Sentinel.
// Unwrap returns whichever is set, so that errors.As(err, &fieldErr) and
// errors.Is(err, catalog.ErrNotFound) work on what Pool.Call returns, and
// an HTTP handler can answer 400 naming the field, or 404.
type RemoteError struct {
	// Message is the text of the remote error, for people: the encoding
	// WireError adds is removed.
	Message string
	// FieldError is the invalid field the remote method reported, or nil.
	FieldError *catalog.FieldError
	// Sentinel is the well-known error the remote error wrapped, or nil.
	// It is nil whenever FieldError is set.
	Sentinel error
}

func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns FieldError when it is set, else Sentinel (nil when neither
// is).
func (e *RemoteError) Unwrap() error {
	if e.FieldError != nil {
		return e.FieldError
	}
	return e.Sentinel
}

// The encoding of an error's structure in the text the wire carries:
//
//	cairn-error/1 field "<Field>" "<Reason>" <message>
//	cairn-error/1 is <code> <message>
//	cairn-error/1 text <message>
//
// Field and Reason are Go-quoted (strconv.Quote), so they may hold any
// byte, spaces and quotes included: a field names a user's metadata key,
// which may be anything. The message is the rest of the text, the error as
// people read it. "is" names a sentinel by a code (sentinelCode). "text"
// marks an error without structure whose own text begins with the marker,
// so it is not read as one with structure. Kinds and codes are only ever
// added; a reader that does not know a kind keeps the whole text as the
// message, and one that does not know a code keeps the message without a
// sentinel.
const wireMarker = "cairn-error/1 "

// WireError prepares an error returned by an RPC method for the wire,
// which carries only an error's text: it writes into the text what a
// caller branches on: a *catalog.FieldError that errors.As finds in err
// (its Field and Reason), or a sentinel that errors.Is finds
// (catalog.ErrNotFound, ErrConflictingConsistency, ErrNoPathToDatacenter,
// ErrRateLimited). The calling side's codec decodes it into a
// *RemoteError. The Server applies it to every method's error, for both
// doors (Server.Call decodes the text as Pool.Call does), so methods need
// not; an error it returned already is returned as it is.
//
// A *RemoteError (the answer of a server this one forwarded the request
// to) is encoded again from its structure, so a field error survives two
// hops. An error with nothing to encode is returned as it is. The error
// returned unwraps to err, for callers in the same process. WireError(nil)
// is nil, and an error with empty text gets one: the wire tells success
// from failure by an empty error text.
func WireError(err error) error {
	if err == nil {
		return nil
	}
	if we, ok := err.(*wireError); ok { // encoded already: not twice
		return we
	}
	msg := err.Error()
	var text string
	if fe, ok := errors.AsType[*catalog.FieldError](err); ok && fe != nil {
		text = wireMarker + "field " + strconv.Quote(fe.Field) + " " + strconv.Quote(fe.Reason) + " " + msg
	} else if code := sentinelCode(err); code != "" {
		text = wireMarker + "is " + code + " " + msg
	} else if strings.HasPrefix(msg, wireMarker) {
		text = wireMarker + "text " + msg
	} else if msg == "" {
		text = fmt.Sprintf("remote error %T without text", err)
	} else {
		return err
	}
	return &wireError{text: text, err: err}
}

// wireError is an error as WireError encoded it.
type wireError struct {
	text string
	err  error
}

func (e *wireError) Error() string { return e.text }
func (e *wireError) Unwrap() error { return e.err }

// sentinelCode returns the wire code of the sentinel err wraps, or "" for
// none. Every sentinel an answer may wrap has one, so that a caller (and
// the HTTP API after it) tells them apart: ErrNotFound is a 404, a
// conflicting consistency mode a 400, no path to a datacenter a failure
// of that datacenter's names only, a rate-limited write a 429 to retry
// later, an unknown outcome a 503 that says so. Never ErrTransport,
// ErrNotSent, ErrCodec or ErrMessageTooLarge, nor a context's errors:
// those describe the caller's own call, and a server's hop failing is not
// that (read as its own transport error, a caller would retry a call that
// ran). A server wraps such a failure in what it means (no leader, an
// unknown outcome, a server that stopped before answering); a codec error
// between servers is servers of two versions disagreeing, which stays an
// error without a code. TestEverySentinelHasACode keeps the list whole. A code, once sent, is
// never changed or reused; sentinelOf maps it back.
func sentinelCode(err error) string {
	switch {
	// First: a write whose fate is unknown says so whatever else its
	// error wraps (the not-leader of a leadership lost mid-apply, the
	// deadline of a forward that ran out), or a caller would send it
	// again as one that was not applied.
	case errors.Is(err, ErrUnknownOutcome):
		return "unknown-outcome"
	case errors.Is(err, catalog.ErrNotFound):
		return "not-found"
	case errors.Is(err, ErrConflictingConsistency):
		return "conflicting-consistency"
	case errors.Is(err, ErrUnknownDatacenter): // before the no-path it wraps
		return "unknown-datacenter"
	case errors.Is(err, ErrNoPathToDatacenter):
		return "no-path-to-datacenter"
	case errors.Is(err, ErrNoLeader):
		return "no-leader"
	case errors.Is(err, ErrServerStopping):
		return "server-stopping"
	case errors.Is(err, ErrNotLeader):
		return "not-leader"
	case errors.Is(err, ErrRateLimited):
		return "rate-limited"
	case errors.Is(err, ErrTooManyCalls):
		return "too-many-calls"
	case errors.Is(err, ErrPermissionDenied):
		return "permission-denied"
	case errors.Is(err, ErrACLNotFound):
		return "acl-not-found"
	case errors.Is(err, ErrACLDisabled):
		return "acl-disabled"
	case errors.Is(err, ErrStreamEnded):
		return "stream-ended"
	case errors.Is(err, ErrServerClosed), errors.Is(err, ErrPoolClosed):
		// This server (or the pool it forwards through) is shutting
		// down: to its caller, a server that stopped before answering.
		return "server-stopping"
	}
	return ""
}

// sentinelOf is the inverse of sentinelCode: nil for an unknown code.
func sentinelOf(code string) error {
	switch code {
	case "not-found":
		return catalog.ErrNotFound
	case "conflicting-consistency":
		return ErrConflictingConsistency
	case "no-path-to-datacenter":
		return ErrNoPathToDatacenter
	case "unknown-datacenter":
		return ErrUnknownDatacenter
	case "no-leader":
		return ErrNoLeader
	case "server-stopping":
		return ErrServerStopping
	case "not-leader":
		return ErrNotLeader
	case "rate-limited":
		return ErrRateLimited
	case "too-many-calls":
		return ErrTooManyCalls
	case "permission-denied":
		return ErrPermissionDenied
	case "acl-not-found":
		return ErrACLNotFound
	case "acl-disabled":
		return ErrACLDisabled
	case "stream-ended":
		return ErrStreamEnded
	case "unknown-outcome":
		return ErrUnknownOutcome
	}
	return nil
}

// newRemoteError decodes the error text a server sent (see WireError).
// Text without the marker, or with a malformed or unknown encoding, is
// kept whole as the message: a broken encoding costs the structure, never
// the error.
func newRemoteError(text string) *RemoteError {
	plain := &RemoteError{Message: text}
	rest, ok := strings.CutPrefix(text, wireMarker)
	if !ok {
		return plain
	}
	kind, rest, _ := strings.Cut(rest, " ")
	switch kind {
	case "field":
		field, rest, ok := cutQuoted(rest)
		if !ok {
			return plain
		}
		if rest, ok = strings.CutPrefix(rest, " "); !ok {
			return plain
		}
		reason, rest, ok := cutQuoted(rest)
		if !ok {
			return plain
		}
		msg, ok := cutMessage(rest)
		if !ok {
			return plain
		}
		fe := &catalog.FieldError{Field: field, Reason: reason}
		if msg == "" {
			msg = fe.Error()
		}
		return &RemoteError{Message: msg, FieldError: fe}
	case "is":
		code, msg, _ := strings.Cut(rest, " ")
		sentinel := sentinelOf(code)
		if msg == "" {
			if sentinel == nil {
				return plain
			}
			msg = sentinel.Error()
		}
		return &RemoteError{Message: msg, Sentinel: sentinel}
	case "text":
		if rest == "" {
			return plain
		}
		return &RemoteError{Message: rest}
	}
	return plain
}

// cutQuoted unquotes the double-quoted Go string s begins with and returns
// it with the rest of s.
func cutQuoted(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", s, false
	}
	value, err = strconv.Unquote(q)
	if err != nil {
		return "", s, false
	}
	return value, s[len(q):], true
}

// cutMessage returns the message that ends an encoding: nothing, or a
// space and the message.
func cutMessage(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	return strings.CutPrefix(s, " ")
}
