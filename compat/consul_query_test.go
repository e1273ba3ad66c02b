package compat_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	consul "github.com/hashicorp/consul/api"
)

// TestConsulPreparedQueryFields defines a prepared query through Consul's
// client, which sends every field of its definition, and expects it back
// as sent; executing it filters on NodeMeta and ServiceMeta and leaves out
// IgnoreCheckIDs when judging health. What cairn cannot do (peering
// targets, templates) is refused naming the field.
func TestConsulPreparedQueryFields(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	for _, n := range []struct {
		node, rack, version string
		failing             bool
	}{
		{"n1", "r1", "4.0", false},
		{"n2", "r2", "4.0", false}, // other rack
		{"n3", "r1", "3.2", false}, // other version
		{"n4", "r1", "4.0", true},  // failing check "bad"
	} {
		reg := &consul.CatalogRegistration{
			Node: n.node, Address: "192.0.2.1", NodeMeta: map[string]string{"rack": n.rack},
			Service: &consul.AgentService{ID: "redis1", Service: "redis", Port: 6379, Meta: map[string]string{"version": n.version}},
		}
		if n.failing {
			reg.Check = &consul.AgentCheck{CheckID: "bad", Name: "bad", ServiceID: "redis1", Status: consul.HealthCritical}
		}
		if _, err := c.Catalog().Register(reg, nil); err != nil {
			t.Fatalf("register %s: %v", n.node, err)
		}
	}
	q := c.PreparedQuery()
	def := &consul.PreparedQueryDefinition{
		Name: "redis-r1",
		Service: consul.ServiceQuery{
			Service:     "redis",
			Failover:    consul.QueryFailoverOptions{Targets: []consul.QueryFailoverTarget{{Datacenter: "dc2"}}},
			NodeMeta:    map[string]string{"rack": "r1"},
			ServiceMeta: map[string]string{"version": "4.0"},
		},
		Template: consul.QueryTemplate{RemoveEmptyTags: true},
	}
	var err error
	if def.ID, _, err = q.Create(def, nil); err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, _, err := q.Get(def.ID, nil)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], def) {
		t.Fatalf("Get: got %+v, %v; want %+v", got, err, def)
	}
	nodes := func() []string {
		t.Helper()
		res, _, err := q.Execute(def.ID, nil)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		var out []string
		for _, e := range res.Nodes {
			out = append(out, e.Node.Node)
		}
		slices.Sort(out)
		return out
	}
	if got := nodes(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("Execute: got %v, want [n1] (rack r1, version 4.0, healthy)", got)
	}
	def.Service.IgnoreCheckIDs = []string{"bad"}
	if _, err := q.Update(def, nil); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got := nodes(); !slices.Equal(got, []string{"n1", "n4"}) {
		t.Errorf("Execute ignoring check bad: got %v, want [n1 n4]", got)
	}

	for _, tc := range []struct {
		edit  func(*consul.PreparedQueryDefinition)
		field string
	}{
		{func(d *consul.PreparedQueryDefinition) {
			d.Service.Failover.Targets = []consul.QueryFailoverTarget{{Peer: "other"}}
		}, "Service.Failover.Targets[0].Peer"},
		{func(d *consul.PreparedQueryDefinition) {
			d.Service.Failover = consul.QueryFailoverOptions{NearestN: 1, Targets: []consul.QueryFailoverTarget{{Datacenter: "dc2"}}}
		}, "Service.Failover.Targets"},
		{func(d *consul.PreparedQueryDefinition) { d.Template.Type = "name_prefix_match" }, "Template.Type"},
	} {
		d := &consul.PreparedQueryDefinition{Service: consul.ServiceQuery{Service: "redis"}}
		tc.edit(d)
		if _, _, err := q.Create(d, nil); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Create %+v: got %v, want a 400 naming %s", d, err, tc.field)
		}
	}
}
