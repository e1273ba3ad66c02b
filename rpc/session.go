package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the Session endpoint (sessions, which
// lock keys of the key/value store), served by package consensus beside
// the KVS endpoint. Fields are only ever added.

// SessionEndpoint is the name the Session endpoint is registered under on
// the Server.
const SessionEndpoint = "Session"

// The methods of the Session endpoint, as Pool.Call names them.
const (
	// MethodSessionApply creates or destroys a session
	// (SessionApplyRequest → SessionApplyResponse).
	MethodSessionApply = SessionEndpoint + ".Apply"
	// MethodSessionGet reads one session (SessionGetRequest →
	// SessionsResponse).
	MethodSessionGet = SessionEndpoint + ".Get"
	// MethodSessionList reads the sessions of a node, or all
	// (SessionListRequest → SessionsResponse).
	MethodSessionList = SessionEndpoint + ".List"
	// MethodSessionRenew restarts a session's TTL on the leader
	// (SessionRenewRequest → SessionsResponse).
	MethodSessionRenew = SessionEndpoint + ".Renew"
)

// SessionApplyRequest creates (Op catalog.SessionCreate; the server chooses
// the ID) or destroys (catalog.SessionDestroy; only Session.ID is read) a
// session.
type SessionApplyRequest struct {
	WriteRequest
	Op        catalog.SessionOp
	Session   catalog.Session
	Forwarded bool
}

// SessionApplyResponse holds the session's ID.
type SessionApplyResponse struct {
	ID string
}

// SessionGetRequest asks for one session.
type SessionGetRequest struct {
	QueryOptions
	ID        string
	Forwarded bool
}

// SessionListRequest asks for the sessions of Node, or every session when
// Node is "".
type SessionListRequest struct {
	QueryOptions
	Node      string
	Forwarded bool
}

// SessionRenewRequest restarts session ID's TTL.
type SessionRenewRequest struct {
	WriteRequest
	ID        string
	Forwarded bool
}

// SessionsResponse holds sessions: none when Get's or Renew's session does
// not exist.
type SessionsResponse struct {
	QueryMeta
	Sessions []*catalog.Session
}
