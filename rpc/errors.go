package rpc

import "errors"

// ErrTransport is wrapped by every error of Pool.Call that came from
// reaching the server or moving bytes to and from it: the dial, the
// session, the stream, a broken or oversized frame. The call may or may not
// have run on the server; a read can be retried on another server, a write
// has an unknown fate. Errors returned by the remote method are
// *RemoteError instead, and the caller's own context ending is
// context.Canceled or context.DeadlineExceeded; neither wraps ErrTransport.
var ErrTransport = errors.New("rpc transport error")

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

// ErrConflictingConsistency is returned by QueryOptions.Validate when both
// AllowStale and RequireConsistent are set.
var ErrConflictingConsistency = errors.New("AllowStale and RequireConsistent are mutually exclusive")

// RemoteError is an error returned by the remote method (or by the remote
// net/rpc server, such as an unknown method): the call reached the server
// and ran, or was refused, there. Callers must not retry it on another
// server as if it were a transport error. Message is the text the server
// sent; errors.As recovers it.
type RemoteError struct {
	Message string
}

func (e *RemoteError) Error() string { return e.Message }
