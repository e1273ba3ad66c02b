package api_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

const (
	accessor = "6a1253d2-1785-24fd-91c2-f8e78c745511"
	secret   = "45a3bd52-07c7-47a4-52fd-0745e0cfe967"
	policyID = "e359bd81-baca-903e-7e64-1ccd9fdc78f5"
)

const tokenJSON = `{"AccessorID": "` + accessor + `", "SecretID": "` + secret + `", "Description": "d",
	"Policies": [{"ID": "` + policyID + `", "Name": "web"}], "Local": true,
	"CreateTime": "2024-05-01T10:00:00Z", "CreateIndex": 7, "ModifyIndex": 9}`

const policyJSON = `{"ID": "` + policyID + `", "Name": "web", "Description": "d",
	"Rules": "service \"web\" { policy = \"write\" }", "CreateIndex": 3, "ModifyIndex": 4}`

func TestACLTokenCalls(t *testing.T) {
	ctx := context.Background()
	want := api.ACLToken{
		AccessorID: accessor, SecretID: secret, Description: "d",
		Policies: []api.ACLLink{{ID: policyID, Name: "web"}}, Local: true,
		CreateTime: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), CreateIndex: 7, ModifyIndex: 9,
	}
	for _, tc := range []struct {
		name               string
		call               func(*api.ACL) (*api.ACLToken, error)
		method, path, body string
	}{
		{"bootstrap", func(a *api.ACL) (*api.ACLToken, error) { return a.Bootstrap(ctx, "") }, "PUT", "/v1/acl/bootstrap", ""},
		{"bootstrap with secret", func(a *api.ACL) (*api.ACLToken, error) { return a.Bootstrap(ctx, secret) },
			"PUT", "/v1/acl/bootstrap", `{"BootstrapSecret":"` + secret + `"}`},
		{"create", func(a *api.ACL) (*api.ACLToken, error) {
			return a.TokenCreate(ctx, &api.ACLToken{Description: "d", Policies: []api.ACLLink{{Name: "web"}}})
		}, "PUT", "/v1/acl/token", `{"Description":"d","Policies":[{"Name":"web"}],"Local":false}`},
		{"update", func(a *api.ACL) (*api.ACLToken, error) {
			return a.TokenUpdate(ctx, &api.ACLToken{AccessorID: accessor, Policies: []api.ACLLink{{ID: policyID}}, Local: true})
		}, "PUT", "/v1/acl/token/" + accessor, `{"AccessorID":"` + accessor + `","Description":"","Policies":[{"ID":"` + policyID + `"}],"Local":true}`},
		{"read", func(a *api.ACL) (*api.ACLToken, error) { return a.TokenRead(ctx, accessor) }, "GET", "/v1/acl/token/" + accessor, ""},
		{"read self", func(a *api.ACL) (*api.ACLToken, error) { return a.TokenReadSelf(ctx) }, "GET", "/v1/acl/token/self", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, seen := fakeAgent(t, reply{Body: tokenJSON})
			got, err := tc.call(c.ACL())
			if err != nil {
				t.Fatal(err)
			}
			req := only(t, seen)
			checkRequest(t, req, tc.method, tc.path, "")
			if strings.TrimSpace(string(req.Body)) != tc.body {
				t.Errorf("got body %s, want %s", req.Body, tc.body)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("got %+v, want %+v", *got, want)
			}
		})
	}
}

func TestACLPolicyCalls(t *testing.T) {
	ctx := context.Background()
	want := api.ACLPolicy{ID: policyID, Name: "web", Description: "d", Rules: `service "web" { policy = "write" }`, CreateIndex: 3, ModifyIndex: 4}
	for _, tc := range []struct {
		name               string
		call               func(*api.ACL) (*api.ACLPolicy, error)
		method, path, body string
	}{
		{"create", func(a *api.ACL) (*api.ACLPolicy, error) {
			return a.PolicyCreate(ctx, &api.ACLPolicy{Name: "web", Rules: "r"})
		}, "PUT", "/v1/acl/policy", `{"Name":"web","Description":"","Rules":"r"}`},
		{"update", func(a *api.ACL) (*api.ACLPolicy, error) {
			return a.PolicyUpdate(ctx, &api.ACLPolicy{ID: policyID, Name: "web", Rules: "r"})
		}, "PUT", "/v1/acl/policy/" + policyID, `{"ID":"` + policyID + `","Name":"web","Description":"","Rules":"r"}`},
		{"read", func(a *api.ACL) (*api.ACLPolicy, error) { return a.PolicyRead(ctx, policyID) }, "GET", "/v1/acl/policy/" + policyID, ""},
		{"read by name", func(a *api.ACL) (*api.ACLPolicy, error) { return a.PolicyReadByName(ctx, "web/x y") },
			"GET", "/v1/acl/policy/name/web%2Fx%20y", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, seen := fakeAgent(t, reply{Body: policyJSON})
			got, err := tc.call(c.ACL())
			if err != nil {
				t.Fatal(err)
			}
			req := only(t, seen)
			checkRequest(t, req, tc.method, tc.path, "")
			if strings.TrimSpace(string(req.Body)) != tc.body {
				t.Errorf("got body %s, want %s", req.Body, tc.body)
			}
			if *got != want {
				t.Errorf("got %+v, want %+v", *got, want)
			}
		})
	}
}

func TestACLListsAndDeletes(t *testing.T) {
	ctx := context.Background()
	c, seen := fakeAgent(t, reply{Body: `[{"AccessorID": "` + accessor + `", "Description": "d", "Local": false}]`})
	tokens, err := c.ACL().TokenList(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].AccessorID != accessor {
		t.Errorf("TokenList: got %+v, %v", tokens, err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/acl/tokens", "")

	c, seen = fakeAgent(t, reply{Body: `[{"ID": "` + policyID + `", "Name": "web"}]`})
	policies, err := c.ACL().PolicyList(ctx)
	if err != nil || len(policies) != 1 || policies[0].Name != "web" {
		t.Errorf("PolicyList: got %+v, %v", policies, err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/acl/policies", "")

	c, seen = fakeAgent(t, reply{Body: `true`})
	if err := c.ACL().TokenDelete(ctx, accessor); err != nil {
		t.Errorf("TokenDelete: %v", err)
	}
	checkRequest(t, only(t, seen), "DELETE", "/v1/acl/token/"+accessor, "")
	c, seen = fakeAgent(t, reply{Body: `true`})
	if err := c.ACL().PolicyDelete(ctx, policyID); err != nil {
		t.Errorf("PolicyDelete: %v", err)
	}
	checkRequest(t, only(t, seen), "DELETE", "/v1/acl/policy/"+policyID, "")
}

func TestACLRefusesBadArguments(t *testing.T) {
	ctx := context.Background()
	c, seen := fakeAgent(t, reply{Body: `{}`})
	a := c.ACL()
	for name, call := range map[string]func() error{
		"PolicyCreate nil":     func() error { _, err := a.PolicyCreate(ctx, nil); return err },
		"PolicyCreate with ID": func() error { _, err := a.PolicyCreate(ctx, &api.ACLPolicy{ID: policyID}); return err },
		"PolicyUpdate no ID":   func() error { _, err := a.PolicyUpdate(ctx, &api.ACLPolicy{Name: "x"}); return err },
		"PolicyRead":           func() error { _, err := a.PolicyRead(ctx, ""); return err },
		"PolicyReadByName":     func() error { _, err := a.PolicyReadByName(ctx, ""); return err },
		"PolicyDelete":         func() error { return a.PolicyDelete(ctx, "") },
		"TokenCreate nil":      func() error { _, err := a.TokenCreate(ctx, nil); return err },
		"TokenUpdate no ID":    func() error { _, err := a.TokenUpdate(ctx, &api.ACLToken{}); return err },
		"TokenRead":            func() error { _, err := a.TokenRead(ctx, ""); return err },
		"TokenRead self":       func() error { _, err := a.TokenRead(ctx, "self"); return err },
		"TokenDelete":          func() error { return a.TokenDelete(ctx, "") },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: got no error, want one", name)
		}
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("the agent saw %d requests, want none", len(got))
	}
}

// TestACLDenied checks that a refusal is a *StatusError carrying the
// agent's words.
func TestACLDenied(t *testing.T) {
	c, _ := fakeAgent(t, reply{Status: 403, Body: `{"error": "Permission denied: token lacks acl:write"}`})
	_, err := c.ACL().PolicyCreate(context.Background(), &api.ACLPolicy{Name: "x", Rules: "r"})
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 403 || se.Message != "Permission denied: token lacks acl:write" {
		t.Fatalf("got %v, want a 403 *api.StatusError with the agent's message", err)
	}
	if got, want := err.Error(), "agent returned 403: Permission denied: token lacks acl:write"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
