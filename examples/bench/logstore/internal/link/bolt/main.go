// Command bolt links hashicorp/raft with raft-boltdb/v2, for the logstore
// bench to measure what the store adds. It does nothing useful when run.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	s, err := raftboltdb.NewBoltStore(os.Args[1])
	if err != nil {
		fmt.Println(err)
		return
	}
	_, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(raft.DefaultConfig(), nil, s, s, raft.NewInmemSnapshotStore(), trans)
	fmt.Println(r, err)
}
