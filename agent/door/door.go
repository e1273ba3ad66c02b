// Package door is how an agent's consumers reach the servers: the DNS
// cache and its change feed, the HTTP API, anti-entropy, snapshots,
// prepared queries and membership all call the servers' endpoints
// (rpc.Method*) through one Door. A server agent serves the call in
// process (Server); a client agent sends it to a server of its
// datacenter found in LAN gossip (ServerList) and fails over between
// them (Client): what happens when a client's server dies is told here.
// WithToken gives every call the token it is made with.
//
// It imports rpc, acl (the token in a context) and gossip (the server
// list); nothing of the agent.
package door

import (
	"context"

	"github.com/cairndns/cairn/rpc"
)

// Door is the one way to the servers. Either way the endpoint does the
// same thing: forward to the leader, to another datacenter, block,
// validate.
//
// RPC may be called from any goroutine. ctx bounds the call, on the
// server too (blocking waits and forwards end with it). Stream starts a
// stream method (the change feed): ctx bounds the start; the stream then
// stays with the server that took it until it is closed or fails.
type Door interface {
	RPC(ctx context.Context, method string, args, reply any) error
	Stream(ctx context.Context, method string, args any) (rpc.Stream, error)
}

// Server serves a server agent's calls in process: the endpoints
// registered on its rpc server run in the calling goroutine, with no
// connection to itself.
type Server struct{ srv *rpc.Server }

var (
	_ Door = Server{}
	_ Door = (*Client)(nil)
	_ Door = tokenDoor{}
)

// NewServer returns the door of the server agent whose rpc server is srv.
func NewServer(srv *rpc.Server) Server { return Server{srv: srv} }

func (d Server) RPC(ctx context.Context, method string, args, reply any) error {
	return d.srv.Call(ctx, method, args, reply)
}

func (d Server) Stream(ctx context.Context, method string, args any) (rpc.Stream, error) {
	return d.srv.Stream(ctx, method, args)
}
