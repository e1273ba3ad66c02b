package rpc

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The test receivers declare every method public: these tests are about
// the transport, TestDispatcherEnforcesNeeds about the declarations.
func public(names ...string) Needs {
	n := Needs{}
	for _, name := range names {
		n[name] = NeedPublic()
	}
	return n
}

func (Endpoint) RPCNeeds() Needs    { return public("Fail", "Panic") }
func (withHelpers) RPCNeeds() Needs { return public("Do") }
func (oldShape) RPCNeeds() Needs    { return public("Do") }
func (valueArgs) RPCNeeds() Needs   { return public("Do") }
func (*Counter) RPCNeeds() Needs    { return public("Bump") }
func (*clock) RPCNeeds() Needs      { return public("Deadline") }
func (*Echo) RPCNeeds() Needs       { return public("Echo", "Fail", "Slow", "Block") }
func (Wire) RPCNeeds() Needs        { return public("Field", "NotFound") }
func (Fuzzy) RPCNeeds() Needs       { return public("Echo", "Map") }
func (Store) RPCNeeds() Needs       { return public("Put", "Get") }

type noMethods struct{}

func (noMethods) RPCNeeds() Needs { return nil }

// guarded has a method of each level.
type guarded struct{ runs *int }

type tokenArgs struct {
	QueryOptions
}

func (g guarded) Open(_ context.Context, _ *tokenArgs, _ *EchoReply) error   { *g.runs++; return nil }
func (g guarded) Known(_ context.Context, _ *tokenArgs, _ *EchoReply) error  { *g.runs++; return nil }
func (g guarded) Manage(_ context.Context, _ *tokenArgs, _ *EchoReply) error { *g.runs++; return nil }
func (guarded) RPCNeeds() Needs {
	return Needs{"Open": NeedPublic(), "Known": NeedToken("key", "read"), "Manage": NeedManagement()}
}

var errNoSuchToken = errors.New("ACL not found")

// tokens knows "known" and "root"; only "root" manages.
type tokens struct{}

func (tokens) AuthorizeCall(_ string, need Need, args any) error {
	switch tok := args.(Authenticated).RequestToken(); {
	case tok == "root":
		return nil
	case tok == "known" && need.Level == LevelToken:
		return nil
	case tok == "known":
		return ErrPermissionDenied
	}
	return errNoSuchToken
}

// TestDispatcherEnforcesNeeds: a method runs only for a caller its Need
// admits, through either door, and a receiver that leaves a method
// undeclared, or declares one it lacks, cannot be registered.
func TestDispatcherEnforcesNeeds(t *testing.T) {
	s, _ := startServer(t, testConfig())
	runs := 0
	if err := s.Register("G", guarded{&runs}); err != nil {
		t.Fatal(err)
	}
	s.SetAuthorizer(tokens{})
	p, _ := newPool(t)
	for _, tc := range []struct {
		method, token string
		ok            bool
	}{
		{"G.Open", "", true}, {"G.Known", "", false}, {"G.Known", "known", true},
		{"G.Manage", "known", false}, {"G.Manage", "root", true}, {"G.Manage", "", false},
	} {
		for door, call := range map[string]func(args *tokenArgs) error{
			"port":       func(a *tokenArgs) error { return p.Call(testCtx(t), s.Addr().String(), tc.method, a, &EchoReply{}) },
			"in process": func(a *tokenArgs) error { return s.Call(testCtx(t), tc.method, a, &EchoReply{}) },
		} {
			before := runs
			err := call(&tokenArgs{QueryOptions{Token: tc.token}})
			ran := runs > before
			if tc.ok != (err == nil) || ran != tc.ok {
				t.Errorf("%s %s with %q: err %v, ran %v; want allowed %v", door, tc.method, tc.token, err, ran, tc.ok)
			}
		}
	}
	want := map[string]Level{"G.Open": LevelPublic, "G.Known": LevelToken, "G.Manage": LevelManagement}
	for _, m := range s.Methods() {
		if strings.HasPrefix(m.Name, "G.") && want[m.Name] != m.Need.Level {
			t.Errorf("Methods: %s is %s, want %s", m.Name, m.Need.Level, want[m.Name])
		}
	}

	for name, tc := range map[string]struct {
		rcvr any
		want string
	}{
		"undeclared method":           {partly{}, "no declared Need"},
		"stray declaration":           {stray{}, `declares "Gone"`},
		"token without a token field": {tokenless{}, "carry no token"},
	} {
		if err := s.Register(strings.ReplaceAll(name, " ", ""), tc.rcvr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Register: got %v, want an error saying %q", name, err, tc.want)
		}
	}
}

type partly struct{}

func (partly) A(context.Context, *EchoArgs, *EchoReply) error { return nil }
func (partly) B(context.Context, *EchoArgs, *EchoReply) error { return nil }
func (partly) RPCNeeds() Needs                                { return public("A") }

type stray struct{}

func (stray) A(context.Context, *EchoArgs, *EchoReply) error { return nil }
func (stray) RPCNeeds() Needs                                { return public("A", "Gone") }

type tokenless struct{}

type plainArgs struct{ N int }

func (tokenless) A(context.Context, *plainArgs, *EchoReply) error { return nil }
func (tokenless) RPCNeeds() Needs                                 { return Needs{"A": NeedToken("key", "read")} }
