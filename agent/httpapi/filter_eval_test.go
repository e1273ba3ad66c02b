package httpapi

import (
	"reflect"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// FuzzFilter: no expression makes compiling or evaluating a ?filter
// panic, whatever it selects in a health entry.
func FuzzFilter(f *testing.F) {
	for _, seed := range []string{
		`Checks.Status == "passing"`, `Checks.0.Status != "x"`, `"a" in Checks.ServiceTags`,
		`any Checks as i, c { c.Status matches "^p" and i == 0 }`, `all Node.Meta as k, v { v != k }`,
		`Service.Port == 80 or not Service.Weights.Passing == 1`, `Node.TaggedAddresses.lan is empty`,
		`Service.TaggedAddresses.wan.Port == 1`, `Checks is not empty`, "Node.Meta.x == `/y`", `Node.Meta.x == "/y"`,
		`Checks.Status contains "ss"`, `Checks.Nope == 1`, `any Checks.ServiceTags as t { t == "x" }`,
	} {
		f.Add(seed)
	}
	entry := &serviceEntry{
		Node: &node{Node: "n1", Meta: map[string]string{"x": "/y"}, TaggedAddresses: map[string]string{}},
		Service: &entryService{ID: "web", Service: "web", Tags: []string{"a"}, Port: 80,
			TaggedAddresses: map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 1}}},
		Checks: []*healthCheck{{CheckID: "c", Status: "passing", ServiceTags: []string{"a"}}, {CheckID: "d", Status: "critical"}},
	}
	typ := reflect.TypeOf(entry)
	f.Fuzz(func(t *testing.T, expr string) {
		fl, err := parseFilter(expr, typ)
		if err != nil {
			return
		}
		_, _ = fl.match(entry)
	})
}
