package agent_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/rpc"
)

// TestRPCContract compares what a server's RPC port publishes (every
// method, call or stream, and the msgpack shape of its arguments and
// reply: field names as the wire carries them, and their kinds) with
// testdata/rpc_contract.golden, the previous release's. Agents and
// servers of the previous release call these methods with these shapes
// during a rolling upgrade, so a method or field that is gone, renamed or
// of another kind fails the test. New methods and fields are compatible:
// they are only logged, to be recorded with CAIRN_UPDATE_GOLDEN=1 when
// a release is tagged.
func TestRPCContract(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	got := rpcContract(agent.RPCMethods(a))
	golden := filepath.Join("testdata", "rpc_contract.golden")
	if os.Getenv("CAIRN_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("RPC contract broken: %q is gone or changed. A renamed or reshaped RPC (method, argument or reply field) "+
				"must keep its old form for one release, so that agents and servers of the previous release keep working during "+
				"a rolling upgrade (docs/operating/upgrades.md): add the new form beside the old one, serve both, and drop the old "+
				"one in the release after; then record it with CAIRN_UPDATE_GOLDEN=1", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Logf("new in the RPC contract (compatible; record it with CAIRN_UPDATE_GOLDEN=1): %s", l)
		}
	}
}

// rpcContract is one line per method ("<method> call" or "<method>
// stream") and per field its arguments and reply carry ("<method> args.<path>
// <kind>"), sorted.
func rpcContract(methods []rpc.MethodInfo) []string {
	var out []string
	for _, m := range methods {
		kind := "call"
		if m.Stream {
			kind = "stream"
		}
		out = append(out, m.Name+" "+kind)
		shape(m.Name+" args", m.Args, map[reflect.Type]bool{}, &out)
		shape(m.Name+" reply", m.Reply, map[reflect.Type]bool{}, &out)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var timeType = reflect.TypeFor[time.Time]()

// shape appends a line for each field of t as msgpack encodes it (the
// codec tag's name, else the field's; embedded structs inlined), and
// walks into structs, slices and maps of them; path holds the types being
// walked, so that a recursive type ends.
func shape(prefix string, t reflect.Type, path map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || path[t] {
		return
	}
	path[t] = true
	defer delete(path, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("codec"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && indirect(f.Type).Kind() == reflect.Struct {
			shape(prefix, f.Type, path, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		*out = append(*out, prefix+"."+name+" "+kindOf(f.Type))
		shape(prefix+"."+name, f.Type, path, out)
	}
}

func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// kindOf names t's wire kind: Go type names are not on the wire.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return kindOf(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + kindOf(t.Elem())
	case reflect.Map:
		return "map[" + kindOf(t.Key()) + "]" + kindOf(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return "time"
		}
		return "struct"
	}
	return t.Kind().String()
}
