// Package rpc owns cairn's server port and the RPC that crosses it.
//
// One TCP port per server carries two protocols; the first byte of a
// connection picks which. RaftByte hands the rest of the connection to
// Raft through the server's Layer (a net.Listener plus a Dial, which the
// consensus package adapts to raft.StreamLayer). RPCByte starts a yamux
// session, and every stream of that session carries one call (or one
// stream method's replies) encoded with
// msgpack, in length-prefixed frames (codec.go) so that what a peer sends
// is bounded before it is decoded. A connection that sends any other
// byte, or nothing within ServerConfig.HandshakeTimeout, is closed; such
// refusals are logged at debug level, at most once a minute.
//
// TLSByte wraps either protocol in TLS: the rest of the connection is a
// TLS session whose first byte is RPCByte or RaftByte (ServerConfig.TLS;
// RequireTLS refuses plain connections). Before serving, the server asks
// ServerConfig.Admit whether the peer may connect at all and, for Raft,
// RaftPeer whether its certificate is a server's of this datacenter.
// Writes over the port are rate-limited per client IP address
// (WriteRate, ErrRateLimited), and each address has a budget
// (budget.go): MaxConnsPerClient connections, closed at accept past it,
// and MaxCallsPerClient calls in flight over all of them, refused past it
// with ErrTooManyCalls; servers forwarding their clients' calls
// (Forwarder) are held to the first only. On the calling side
// PoolConfig.TLS and Pool.CallDC verify the server for the datacenter it
// is meant to be in.
//
// On the calling side a Pool keeps one session per server and opens a
// stream per call, so concurrent calls share one connection; it tells an
// error of the remote method (*RemoteError) from a failure to reach the
// server or to finish the exchange (ErrTransport), so that callers retry
// only the latter on another server. Pool.CallCoalesced, for a server
// forwarding writes to its leader, sends the calls that arrive while one
// is in flight as one BatchMethod call whose reply holds each call's own
// answer; the server runs each as a call of its own (authorized, limited,
// under its own deadline, counted in the caller's budget) (batch.go).
// The wire carries an error as text
// only; the server passes every method's error through WireError, which
// writes a *catalog.FieldError or a known sentinel into the text, and the
// calling side decodes it back into the RemoteError, for errors.As and
// errors.Is.
//
// The Server's methods (Register, dispatch.go) are net/rpc's, with the
// caller's context first: func (t *T) M(ctx context.Context, args *A,
// reply *R) error. Each receiver declares what every method needs of its
// caller (RPCNeeds, need.go); Register refuses an undeclared method, and the
// dispatcher checks the declared level through the CallAuthorizer before
// the method runs, on both doors. Over the port, ctx ends when the caller closes its
// stream (its own context ended, or it hung up) or the server shuts
// down, or at the caller's deadline: the request carries the time the
// caller has left, less what it lost on the way (transit.go), never an
// absolute time. Server.Call is the in-process door to the same
// methods: no connection, no encoding, the caller's ctx as it is, and the
// same errors as Pool.Call, so that a server agent reaches its own
// endpoints as a client agent reaches them over the network.
//
// A stream method (RegisterStream, stream.go) answers one request with
// replies for as long as its caller listens: the change feed. Pool.Stream
// and Server.Stream are its two doors, with the errors of a call.
// QueryOptions, QueryMeta and WriteRequest are the envelopes every endpoint
// embeds; BlockingTimeout turns a blocking query's options into its wait.
//
// rpc imports catalog only of cairn's packages, plus yamux and go-msgpack;
// not raft (which lives in consensus).
//
// Concurrency: Server and Pool methods may be called from any goroutine.
// Every goroutine they start is waited for by Server.Shutdown or
// Pool.Close; Server.Shutdown also waits for RPC methods still running,
// so a method that blocks must return when its owner stops.
package rpc
