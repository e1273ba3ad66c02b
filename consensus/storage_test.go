package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// A server whose data dir fills up reports that it cannot write its log:
// it steps down if it leads, autopilot judges it unhealthy and the leader marks its storage check
// critical. Once the room is back it takes writes again by itself,
// without a restart (raft-wal wedges on the failed segment rotation,
// "segment is sealed", until its log store is opened again), and is
// healthy again.
func TestFullDiskServerRecoversOnItsOwn(t *testing.T) {
	t.Parallel()
	disk := consensustest.Tmpfs(t, 3<<20)
	small := func(c *consensus.Config) { c.LogSegmentSize = 128 << 10 }
	nodes := []*consensustest.Node{
		consensustest.StartNodeWith(t, "s1", t.TempDir(), "", small),
		consensustest.StartNodeWith(t, "s2", t.TempDir(), "", small),
		consensustest.StartNodeWith(t, "s3", disk, "", small),
	}
	peers := make([]consensus.Peer, len(nodes))
	for i, n := range nodes {
		peers[i] = n.Peer()
	}
	for _, n := range nodes {
		if err := n.Server.BootstrapCluster(peers); err != nil {
			t.Fatal(err)
		}
	}
	pools := make([]*gossip.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = serverPool(t, n)
		if i > 0 {
			gossiptest.Join(t, pools[i], pools[0])
		}
	}
	cfg := testAutopilotConfig(t)
	for i, n := range nodes {
		runLeader(t, serveAutopilot(t, cfg, n, pools[i]))
	}
	consensustest.WaitForLeader(t, nodes, within)
	full := nodes[2]
	p := rpctest.NewPool(t)
	// storage reports, as the leader sees it, whether full's storage is
	// healthy to autopilot and its storage check in the catalog passing.
	storage := func(want bool) error {
		var leader *consensustest.Node
		for _, n := range nodes {
			if n.Server.IsLeader() {
				leader = n
			}
		}
		if leader == nil {
			return errors.New("no leader")
		}
		h, err := health(t, p, leader)
		if err != nil {
			return err
		}
		sh, ok := serverOf(h, full.ID)
		if !ok {
			return fmt.Errorf("no health of %s", full.ID)
		}
		if got := sh.StorageError == "" && sh.Healthy; got != want {
			return fmt.Errorf("autopilot: %s healthy %v, storage error %q; want healthy %v", full.ID, sh.Healthy, sh.StorageError, want)
		}
		_, checks, err := leader.Store.NodeChecks(nil, full.ID)
		if err != nil {
			return err
		}
		wantStatus := catalog.HealthCritical
		if want {
			wantStatus = catalog.HealthPassing
		}
		for _, c := range checks {
			if c.CheckID == consensus.StorageCheckID && c.ServiceID == consensus.ServerServiceID {
				if c.Status != wantStatus {
					return fmt.Errorf("storage check of %s: got %s, want %s", full.ID, c.Status, wantStatus)
				}
				return nil
			}
		}
		return fmt.Errorf("%s has no storage check on its %s service", full.ID, consensus.ServerServiceID)
	}
	consensustest.WaitFor(t, within, func() error { return storage(true) })
	// The full server leads when its disk fills, so that it must step down.
	consensustest.WaitFor(t, within, func() error {
		if full.Server.IsLeader() {
			return nil
		}
		for _, n := range nodes {
			if n.Server.IsLeader() {
				_ = n.Server.TransferLeadership(context.Background(), "")
			}
		}
		return fmt.Errorf("%s does not lead", full.ID)
	})

	value := []byte(strings.Repeat("x", 1<<10))
	seq := 0
	// write sets the next key through whichever server leads, and
	// returns its name once committed.
	write := func() (string, error) {
		seq++
		key := fmt.Sprintf("k%05d", seq)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, n := range nodes {
			if !n.Server.IsLeader() {
				continue
			}
			_, err := n.Server.ApplyKV(ctx, &catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: key, Value: value}})
			return key, err
		}
		return key, fmt.Errorf("no leader for %s", key)
	}
	has := func(n *consensustest.Node, key string) error {
		if _, e, err := n.Store.KVGet(nil, key); err != nil || e == nil {
			return fmt.Errorf("%s lacks %s (%v)", n.ID, key, err)
		}
		return nil
	}

	// Room for a sealed segment's index but not for the next segment: the
	// rotation fails.
	free := consensustest.Fill(t, disk, 32<<10)
	consensustest.WaitFor(t, 60*time.Second, func() error {
		_, _ = write() // fails while the full server leads, until it steps down
		if st := full.Server.StorageStatus(); st.Healthy {
			return fmt.Errorf("%s still reports its storage healthy (%d failures)", full.ID, st.Failures)
		}
		return nil
	})
	st := full.Server.StorageStatus()
	if st.Failures == 0 || st.Error == "" || st.Since.IsZero() {
		t.Fatalf("unhealthy storage status: got %+v, want failures, an error and when it began", st)
	}
	// The other two keep the datacenter writable.
	var last string
	consensustest.WaitFor(t, within, func() (err error) {
		last, err = write()
		return err
	})
	if err := has(full, last); err == nil {
		t.Fatalf("%s applied %s with a full disk", full.ID, last)
	}
	if full.Server.IsLeader() {
		t.Fatalf("%s leads with a full disk", full.ID)
	}
	consensustest.WaitFor(t, within, func() error { return storage(false) })

	free()
	// One write at a time, each waited for: the full server must catch up
	// on its own.
	var key string
	consensustest.WaitFor(t, 60*time.Second, func() error {
		if key == "" {
			var err error
			if key, err = write(); err != nil {
				key = ""
				return err
			}
		}
		if err := has(full, key); err != nil {
			return err
		}
		if st := full.Server.StorageStatus(); !st.Healthy {
			return fmt.Errorf("%s storage still unhealthy: %s", full.ID, st.Error)
		}
		return storage(true)
	})
}
