package rpc

import "errors"

// Failure is what a failed call's error says about the call, for a caller
// that may send it to another server (the client door, a server forwarding
// to the leader or to another datacenter). Each caller's policy (who the
// other server is, whether a write may be sent again) stays its own; what
// the error means is read here, once.
type Failure int

const (
	// Answered: the server answered with this error, or the call failed
	// in a way no other server cures. It is the call's answer.
	Answered Failure = iota
	// Unsent: the request never left (ErrTransport with ErrNotSent).
	Unsent
	// Broken: the connection failed after the request was sent.
	Broken
	// NoLeader: the server knew no leader and did nothing.
	NoLeader
	// Busy: the server refused the call, unrun, over this client's
	// budget (ErrTooManyCalls); another may have room.
	Busy
	// NotLeader: the server was not the leader, or stopped being it
	// during the call.
	NotLeader
	// Stopping: the server stopped before answering.
	Stopping
	// Unknown: a server met ErrUnknownOutcome (it lost a forward, or its
	// leadership went mid-apply).
	Unknown
)

// Classify reads err, a call's error, as a Failure.
func Classify(err error) Failure {
	switch {
	case errors.Is(err, ErrTransport) && errors.Is(err, ErrNotSent):
		return Unsent
	case errors.Is(err, ErrTransport):
		return Broken
	case errors.Is(err, ErrNoLeader):
		return NoLeader
	case errors.Is(err, ErrTooManyCalls):
		return Busy
	case errors.Is(err, ErrNotLeader):
		return NotLeader
	case errors.Is(err, ErrServerStopping):
		return Stopping
	case errors.Is(err, ErrUnknownOutcome):
		return Unknown
	}
	return Answered
}

// Elsewhere reports whether another server may take the call.
func (f Failure) Elsewhere() bool { return f != Answered }

// Unapplied reports whether the call certainly did nothing: it never
// reached a server, or the server refused it unrun. A write that failed
// otherwise, and that another server may take, has an unknown fate; so
// does one the caller gave up on (a timeout) after sending it.
func (f Failure) Unapplied() bool { return f == Unsent || f == NoLeader || f == Busy }
