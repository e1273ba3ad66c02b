package consensus

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// scaleDump is a catalog of nodes × perNode service instances, each with
// a passing HTTP check, shaped as examples/bench/scale registers it.
func scaleDump(nodes, perNode int) *catalog.Dump {
	d := &catalog.Dump{Index: uint64(nodes * perNode)}
	for n := range nodes {
		name := fmt.Sprintf("node-%05d", n)
		d.Nodes = append(d.Nodes, &catalog.Node{Node: name, Address: fmt.Sprintf("10.%d.%d.%d", 1+n>>16, n>>8&255, n&255)})
		for i := range perNode {
			svc := &catalog.Service{ID: fmt.Sprintf("inst-%d", i), Service: fmt.Sprintf("svc-%03d", (n*perNode+i)%200), Port: 20000 + i}
			d.Services = append(d.Services, catalog.DumpService{Node: name, Service: svc})
			d.Checks = append(d.Checks, &catalog.Check{
				Node: name, CheckID: "service:" + svc.ID, Name: "Service '" + svc.Service + "' check", Status: catalog.HealthPassing,
				ServiceID: svc.ID, ServiceName: svc.Service, Type: "http",
				Output: fmt.Sprintf(`HTTP GET http://%s:%d/health: 200 OK Output: {"status":"ok"}`, d.Nodes[len(d.Nodes)-1].Address, svc.Port),
			})
		}
	}
	return d
}

// BenchmarkFSMRestore restores a snapshot of 100,000 instances, each with
// a check, over 5,000 nodes, as a follower does when the leader sends it
// one and as every server does at start.
func BenchmarkFSMRestore(b *testing.B) {
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(fsmState{Dump: scaleDump(5000, 20)}); err != nil {
		b.Fatal(err)
	}
	store, err := catalog.NewStore()
	if err != nil {
		b.Fatal(err)
	}
	f := &fsm{store: store}
	empty := liveHeap()
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		// Raft opens the snapshot through the store, which tells its
		// size (sizedSnapshots).
		rc := sizedReader{ReadCloser: io.NopCloser(bytes.NewReader(buf.Bytes())), size: int64(buf.Len())}
		if err := f.Restore(rc); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// The live heap the restored catalog holds, once the previous
	// generations and the garbage of building it are collected: what a
	// server keeps for it, and what a restore must find room for again
	// while the old one still answers reads.
	b.ReportMetric(float64(int64(liveHeap())-int64(empty))/(1<<20), "catalog-MiB")
	runtime.KeepAlive(f)
	runtime.KeepAlive(&buf) // live when empty was measured, so live now
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
