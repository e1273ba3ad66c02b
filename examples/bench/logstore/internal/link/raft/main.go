// Command raft links hashicorp/raft with its in-memory store: the base
// that the logstore bench's other link programs are measured against.
// It does nothing useful when run.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/raft"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	s := raft.NewInmemStore()
	_, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(raft.DefaultConfig(), nil, s, s, raft.NewInmemSnapshotStore(), trans)
	fmt.Println(r, err)
}
