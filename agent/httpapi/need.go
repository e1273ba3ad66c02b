package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/rpc"
)

// Every route declares, where it is registered (routes.go), what a
// request's token needs for each method: a Need. The endpoint wrapper
// checks it before the handler runs, with the request's body closed until
// then, so that a handler cannot read, parse or decompress a byte for a
// caller that may not make the request. The servers check again what
// reaches them.

// Need is what one method of a route needs of the request's token.
type Need struct {
	// Level: public routes check no token; the others need a token the
	// servers know (unknown or expired: 403 ACL not found), a management
	// one for rpc.LevelManagement.
	Level rpc.Level
	// Resource and Access name the permission ("key", "write"); several
	// resources, comma-separated, are alternatives ("service,node": a
	// check belongs to a service or to the node).
	Resource string
	Access   string
	// From is where the name the permission is about comes from:
	// FromNone for operator, acl and keyring; FromPath (PathValue names
	// the path parameter); FromNode, this agent's node; FromRequest, the
	// body or what the path's ID names, known only to the handler or the
	// servers: the token must hold the permission on at least one name
	// of the resource before the body is opened, and the handler or the
	// servers check the name itself.
	From      From
	PathValue string
	// Filtered reads answer what the token may read and leave the rest
	// out rather than refusing.
	Filtered bool
	// BodyFirst lets the handler read the body before the check. No
	// route needs it: a snapshot restore is authorized first too.
	BodyFirst bool
}

// From says where the name a Need is about comes from.
type From uint8

// The sources of a Need's name.
const (
	FromNone From = iota
	FromPath
	FromNode
	FromRequest
)

// Needs is a route's declaration: a Need per method it answers.
type Needs map[string]Need

// The declarations routes.go writes.
func public() Need { return Need{Level: rpc.LevelPublic} }

func management() Need {
	return Need{Level: rpc.LevelManagement, Resource: "acl", Access: "write"}
}

// filtered is a read that leaves out what the token may not read: only
// the token is checked before the handler.
func filtered(resource string) Need {
	return Need{Level: rpc.LevelToken, Resource: resource, Access: "read", From: FromRequest, Filtered: true}
}

// top is a permission on operator, acl or keyring.
func top(resource, access string) Need {
	return Need{Level: rpc.LevelToken, Resource: resource, Access: access}
}

// onPath is a permission on the name the path parameter value holds.
func onPath(resource, access, value string) Need {
	return Need{Level: rpc.LevelToken, Resource: resource, Access: access, From: FromPath, PathValue: value}
}

// onNode is a permission on this agent's node.
func onNode(resource, access string) Need {
	return Need{Level: rpc.LevelToken, Resource: resource, Access: access, From: FromNode}
}

// inRequest is a permission on a name the body holds, or the object the
// path's ID names.
func inRequest(resource, access string) Need {
	return Need{Level: rpc.LevelToken, Resource: resource, Access: access, From: FromRequest}
}

// valid reports a declaration the wrapper could not check.
func (n Need) valid() error {
	switch n.Level {
	case rpc.LevelPublic:
		return nil
	case rpc.LevelManagement:
		return nil
	case rpc.LevelToken:
	default:
		return errors.New("no level")
	}
	if _, ok := acl.AccessNamed(n.Access); !ok {
		return errors.New("access " + n.Access + " is not read, list or write")
	}
	for _, res := range strings.Split(n.Resource, ",") {
		if _, ok := acl.ResourceNamed(res); !ok {
			return errors.New("unknown resource " + res)
		}
	}
	if n.From == FromPath && n.PathValue == "" {
		return errors.New("FromPath without a PathValue")
	}
	return nil
}

// admit checks the request's token against need: nil lets the handler
// run. ACLs off (no authorizer) admit everything.
func (s *Server) admit(r *http.Request, need Need) error {
	if need.Level == rpc.LevelPublic {
		return nil
	}
	authz, err := s.authorizer(r) // an unknown or expired token fails here
	if err != nil || authz == nil {
		return err
	}
	if need.Level == rpc.LevelManagement {
		if !authz.ACLWrite() {
			return acl.Denied("acl", "write", "")
		}
		return nil
	}
	if need.Filtered {
		return nil
	}
	want, _ := acl.AccessNamed(need.Access)
	name := ""
	switch need.From {
	case FromPath:
		name = r.PathValue(need.PathValue)
	case FromNode:
		name = s.cfg.NodeName
	}
	first := ""
	for _, rn := range strings.Split(need.Resource, ",") {
		res, _ := acl.ResourceNamed(rn)
		if first == "" {
			first = rn
		}
		if need.From == FromRequest && authz.AllowedSome(res, want) || need.From != FromRequest && authz.Allowed(res, name, want) {
			return nil
		}
	}
	if need.From == FromRequest {
		return acl.DeniedAny(first, need.Access)
	}
	return acl.Denied(first, need.Access, name)
}

// errBodyClosed is what a handler reading a body before its request was
// admitted gets: a programming error, answered as a 500.
var errBodyClosed = errors.New("httpapi: request body read before the request was authorized")

// gatedBody is a request body that reads nothing until opened.
type gatedBody struct {
	rc   io.ReadCloser
	open bool
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if !g.open {
		return 0, errBodyClosed
	}
	return g.rc.Read(p)
}

func (g *gatedBody) Close() error { return g.rc.Close() }
