package rpc

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Every method a Server publishes declares, where it is registered, what
// its caller needs (a Need). The dispatcher enforces the level before the
// method runs, on both doors; the finer check (which service, which key)
// depends on the arguments and stays in the method, but the declaration
// names it, so that a reader and the attacker test know what each method
// guards.

// Level is what the dispatcher checks of a call's token before the method
// runs.
type Level uint8

// The zero Level is none: a method declared without one is refused.
const (
	// LevelPublic methods are answered to anyone, token or not: they reveal
	// nothing a token guards (Status), or have a rule of their own that
	// the method applies (ACL.Bootstrap, ACL.Resolve).
	LevelPublic Level = iota + 1
	// LevelToken methods run only for a token the servers know (the
	// anonymous one included): an unknown or expired one is refused
	// with ErrACLNotFound before the method runs. The method then checks
	// Need.Resource and Need.Access on what its arguments name.
	LevelToken
	// LevelManagement methods run only for a token that may manage ACLs
	// (acl:write), as Consul's snapshot endpoints.
	LevelManagement
)

func (l Level) String() string {
	switch l {
	case LevelPublic:
		return "public"
	case LevelToken:
		return "authenticated"
	case LevelManagement:
		return "management"
	}
	return "unset"
}

// Need is what a method requires of its caller.
type Need struct {
	Level Level
	// Resource and Access name the permission the method checks on what
	// its arguments name ("service", "write"); empty for public and
	// management methods. Resource may list several ("service,node").
	Resource string
	Access   string
	// Filtered reads answer what the token may read and leave the rest
	// out rather than refusing.
	Filtered bool
}

// Needs is a service's declaration: a Need per method name (without the
// service's name).
type Needs map[string]Need

// NeedPublic, NeedToken, NeedFiltered and NeedManagement build Needs.
func NeedPublic() Need { return Need{Level: LevelPublic} }

// NeedToken is a method that refuses a token lacking resource:access.
func NeedToken(resource, access string) Need {
	return Need{Level: LevelToken, Resource: resource, Access: access}
}

// NeedFiltered is a read that leaves out what the token may not read.
func NeedFiltered(resource string) Need {
	return Need{Level: LevelToken, Resource: resource, Access: "read", Filtered: true}
}

// NeedManagement is a method for management tokens only.
func NeedManagement() Need { return Need{Level: LevelManagement, Resource: "acl", Access: "write"} }

// Declared is implemented by every receiver given to Register: its
// methods' Needs.
type Declared interface {
	RPCNeeds() Needs
}

// CallAuthorizer checks a call's token against its method's Need before
// the method runs (set with Server.SetAuthorizer). It is called only for
// levels above Public, with args the method's decoded *A, which carries
// the token (it satisfies Authenticated). It returns nil to let the call
// run, else the error the caller gets.
type CallAuthorizer interface {
	AuthorizeCall(method string, need Need, args any) error
}

// SetAuthorizer makes the server check every call against its method's
// Need with a; until it is set, every call runs (a server without ACLs).
func (s *Server) SetAuthorizer(a CallAuthorizer) {
	s.authz.Store(&a)
}

// authorize checks a call of a method declared need, with args its *A.
func (s *Server) authorize(name string, need Need, args any) error {
	if need.Level == LevelPublic {
		return nil
	}
	a := s.authz.Load()
	if a == nil {
		return nil
	}
	if err := (*a).AuthorizeCall(name, need, args); err != nil {
		return fmt.Errorf("rpc: %s: %w", name, err)
	}
	return nil
}

// MethodInfo describes one published method, for a test that walks them
// all.
type MethodInfo struct {
	Name   string       // "Service.Method"
	Need   Need         // as declared
	Args   reflect.Type // *A
	Reply  reflect.Type // *R
	Stream bool         // registered with RegisterStream
}

// Methods lists every published method, sorted by name.
func (s *Server) Methods() []MethodInfo {
	t := s.methods.table.Load()
	if t == nil {
		return nil
	}
	out := make([]MethodInfo, 0, len(t.methods)+len(t.streams))
	for _, m := range t.methods {
		out = append(out, MethodInfo{Name: m.name, Need: m.need, Args: m.args, Reply: m.reply})
	}
	for _, m := range t.streams {
		out = append(out, MethodInfo{Name: m.name, Need: m.need, Args: m.args, Reply: m.reply, Stream: true})
	}
	slices.SortFunc(out, func(a, b MethodInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var authenticatedType = reflect.TypeFor[Authenticated]()

// checkNeed reports a declaration the dispatcher could not enforce.
func checkNeed(full string, need Need, args reflect.Type) error {
	switch need.Level {
	case LevelPublic:
		return nil
	case LevelToken, LevelManagement:
		if !args.Implements(authenticatedType) {
			return fmt.Errorf("method %s is declared %s, but its arguments %s carry no token", full, need.Level, args)
		}
		return nil
	}
	return fmt.Errorf("method %s has no declared Need (RPCNeeds)", full)
}
