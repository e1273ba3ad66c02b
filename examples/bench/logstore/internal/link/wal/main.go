// Command wal links hashicorp/raft with raft-wal, for the logstore bench
// to measure what the store adds. It does nothing useful when run.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	s, err := raftwal.Open(os.Args[1])
	if err != nil {
		fmt.Println(err)
		return
	}
	_, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(raft.DefaultConfig(), nil, s, s, raft.NewInmemSnapshotStore(), trans)
	fmt.Println(r, err)
}
