package catalog_test

import (
	"fmt"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// BenchmarkChecksInState reads checks by state from a catalog of 100,000
// service checks over 5,000 nodes, one in a hundred critical. Passing
// checks have no index entry and are found by a scan of the table: this
// shows what that costs beside the indexed states.
func BenchmarkChecksInState(b *testing.B) {
	d := &catalog.Dump{Index: 100_000}
	for n := range 5000 {
		node := fmt.Sprintf("node-%05d", n)
		d.Nodes = append(d.Nodes, &catalog.Node{Node: node, Address: fmt.Sprintf("10.0.%d.%d", n>>8, n&255)})
		for i := range 20 {
			svc := &catalog.Service{ID: fmt.Sprintf("inst-%d", i), Service: fmt.Sprintf("svc-%03d", (n*20+i)%200), Port: 20000 + i}
			d.Services = append(d.Services, catalog.DumpService{Node: node, Service: svc})
			status := catalog.HealthPassing
			if (n*20+i)%100 == 0 {
				status = catalog.HealthCritical
			}
			d.Checks = append(d.Checks, &catalog.Check{Node: node, CheckID: "service:" + svc.ID, Name: "check", Status: status,
				ServiceID: svc.ID, ServiceName: svc.Service, Type: "http"})
		}
	}
	s := newStore(b)
	if err := s.Restore(d); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		state catalog.HealthStatus
		want  int
	}{{catalog.HealthCritical, 1000}, {catalog.HealthPassing, 99_000}, {catalog.HealthAny, 100_000}} {
		b.Run(string(tc.state), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, checks := checksInState(b, s, nil, tc.state)
				if len(checks) != tc.want {
					b.Fatalf("ChecksInState(%q): got %d checks, want %d", tc.state, len(checks), tc.want)
				}
			}
		})
	}
}
