// Command gen wrote the raft-wal v0.4.0 directory above it, which
// TestLogStoreOpensRaftWALv040Dir opens with the raft-wal cairn links. It
// is a module of its own, pinned to v0.4.0:
//
//	cd consensus/testdata/raftwal-v0.4.0/gen && go run . /an/empty/dir
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
)

func main() {
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// write stores CurrentTerm 7 and LastVoteCand s2, entries 1–120 (entry i
// of term 1+i/50, its data "<term>/<i>;" 50 times) five at a time, then
// deletes 1–20 as Raft does after a snapshot.
func write(dir string) error {
	w, err := raftwal.Open(dir, raftwal.WithSegmentSize(16<<10))
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		return err
	}
	if err := w.Set([]byte("LastVoteCand"), []byte("s2")); err != nil {
		return err
	}
	for i := uint64(1); i <= 120; i += 5 {
		var b []*raft.Log
		for j := i; j < i+5; j++ {
			term := 1 + j/50
			b = append(b, &raft.Log{Index: j, Term: term, Type: raft.LogCommand, Data: bytes.Repeat([]byte(fmt.Sprintf("%d/%d;", term, j)), 50)})
		}
		if err := w.StoreLogs(b); err != nil {
			return err
		}
	}
	return w.DeleteRange(1, 20)
}
