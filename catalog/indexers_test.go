package catalog

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-memdb"
)

// The indexers that read fields without reflection must make the very
// keys go-memdb's own make, or lookups through FromArgs would miss.
func TestIndexersMatchMemdb(t *testing.T) {
	lower := func(f string) *memdb.StringFieldIndex { return &memdb.StringFieldIndex{Field: f, Lowercase: true} }
	exact := func(f string) *memdb.StringFieldIndex { return &memdb.StringFieldIndex{Field: f} }
	rows := []*checkRow{
		{Node: "web", CheckID: "serfHealth"},
		{Node: "Web-2", CheckID: "Service:API", ServiceName: "API", Unhealthy: "critical"},
		{Node: "", CheckID: "c"},
		{Node: "n", CheckID: ""},
	}
	schema := schema().Tables[tableChecks].Indexes
	tests := []struct {
		index string
		want  memdb.SingleIndexer
	}{
		{"id", &memdb.CompoundIndex{Indexes: []memdb.Indexer{lower("Node"), exact("CheckID")}}},
		{"service", lower("ServiceName")},
		{"unhealthy", exact("Unhealthy")},
	}
	for _, tt := range tests {
		got := schema[tt.index].Indexer.(memdb.SingleIndexer)
		for _, r := range rows {
			gotOK, gotKey, gotErr := got.FromObject(r)
			wantOK, wantKey, wantErr := tt.want.FromObject(r)
			if gotOK != wantOK || !bytes.Equal(gotKey, wantKey) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("index %s of %+v: got %v %q %v, want %v %q %v", tt.index, *r, gotOK, gotKey, gotErr, wantOK, wantKey, wantErr)
			}
		}
	}
	// Lookups: a whole key, a node's rows, a node name's prefix.
	id := schema["id"].Indexer.(*pairIndex[checkRow])
	want := tests[0].want.(*memdb.CompoundIndex)
	for _, args := range [][]any{{"Web", "serfHealth"}, {"web", "Service:API"}, {"WEB", ""}, {"we"}, {""}, {"web", 1}, {2}, {}, {"a", "b", "c"}} {
		gotKey, gotErr := id.FromArgs(args...)
		wantKey, wantErr := want.FromArgs(args...)
		if !bytes.Equal(gotKey, wantKey) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("FromArgs%q: got %q %v, want %q %v", args, gotKey, gotErr, wantKey, wantErr)
		}
		gotKey, gotErr = id.PrefixFromArgs(args...)
		wantKey, wantErr = want.PrefixFromArgs(args...)
		if !bytes.Equal(gotKey, wantKey) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("PrefixFromArgs%q: got %q %v, want %q %v", args, gotKey, gotErr, wantKey, wantErr)
		}
	}
	// Lookups through one field.
	for _, tt := range []struct {
		got  *fieldIndex[checkRow]
		want *memdb.StringFieldIndex
	}{{id.first, lower("Node")}, {id.second, exact("CheckID")}} {
		for _, args := range [][]any{{"Web"}, {"web"}, {""}, {1}, {}, {"a", "b"}} {
			gotKey, gotErr := tt.got.FromArgs(args...)
			wantKey, wantErr := tt.want.FromArgs(args...)
			if !bytes.Equal(gotKey, wantKey) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s: FromArgs%q: got %q %v, want %q %v", tt.want.Field, args, gotKey, gotErr, wantKey, wantErr)
			}
			gotKey, gotErr = tt.got.PrefixFromArgs(args...)
			wantKey, wantErr = tt.want.PrefixFromArgs(args...)
			if !bytes.Equal(gotKey, wantKey) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s: PrefixFromArgs%q: got %q %v, want %q %v", tt.want.Field, args, gotKey, gotErr, wantKey, wantErr)
			}
		}
	}
	if ok, _, err := schema["id"].Indexer.(memdb.SingleIndexer).FromObject(&serviceRow{Node: "n", ID: "x"}); ok || err == nil {
		t.Errorf("checks id index of a service row: got ok %v, err %v, want an error", ok, err)
	}
}
