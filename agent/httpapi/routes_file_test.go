package httpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateRoutes = flag.Bool("update-routes", false, "write testdata/routes.json from the route table")

// routesFile is where the route table is written for the agent's attacker
// walk (agent/authz_walk_test.go), which starts a real secured agent and
// so cannot live here.
const routesFile = "testdata/routes.json"

// TestRoutesFileIsCurrent keeps testdata/routes.json the route table, so
// that the attacker walk tries every route: a route added without running
// `go test ./agent/httpapi -run RoutesFile -update-routes` fails here.
func TestRoutesFileIsCurrent(t *testing.T) {
	want, err := json.MarshalIndent(Routes(), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *updateRoutes {
		if err := os.WriteFile(routesFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(routesFile)
	if err != nil {
		t.Fatalf("%v: run go test ./agent/httpapi -run RoutesFile -update-routes", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the route table: run go test ./agent/httpapi -run RoutesFile -update-routes", routesFile)
	}
}
