package gossip_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// TestLookupsFollowGossip: a pool finds a member that joined by address,
// node name and node ID, sees it fail, and stops finding it RetainDead
// after it failed, as Members stops listing it.
func TestLookupsFollowGossip(t *testing.T) {
	t.Parallel()
	cs := gossiptest.LANConfig("s1", "dc1", gossip.RoleServer)
	cs.RetainDead = 500 * time.Millisecond
	cc := gossiptest.LANConfig("c1", "dc1", gossip.RoleClient)
	cc.NodeID = idB
	s1, c1 := gossiptest.Start(t, cs), gossiptest.Start(t, cc)
	gossiptest.Join(t, c1, s1)
	gossiptest.WaitStatus(t, wait, "c1", gossip.StatusAlive, s1)

	loopback := netip.MustParseAddr("127.0.0.1")
	// found describes what s1's lookups find of c1: "" when all three
	// find nothing.
	found := func() string {
		byNode, byID := s1.MembersByNode("C1"), s1.MembersByID(idB)
		var at []gossip.Member
		for _, m := range s1.MembersAt(loopback) {
			if m.Name == "c1" {
				at = append(at, m)
			}
		}
		if len(byNode)+len(byID)+len(at) == 0 {
			return ""
		}
		if len(byNode) != 1 || len(byID) != 1 || len(at) != 1 || byNode[0] != byID[0] || byID[0] != at[0] {
			return fmt.Sprintf("inconsistent: by node %+v, by ID %+v, at 127.0.0.1 %+v", byNode, byID, at)
		}
		return byNode[0].Status.String()
	}
	if got := found(); got != "alive" {
		t.Fatalf("s1's lookups of alive c1: got %q, want alive", got)
	}
	if got := len(s1.MembersAt(loopback)); got != 2 {
		t.Errorf("s1 finds %d members at 127.0.0.1, want 2 (s1 and c1)", got)
	}

	if err := c1.Shutdown(); err != nil {
		t.Fatalf("c1 Shutdown: %v", err)
	}
	gossiptest.WaitStatus(t, wait, "c1", gossip.StatusFailed, s1)
	// WaitStatus read Members, which keeps c1 as long as the lookups do:
	// either may see it failed or already forgotten by now.
	gossiptest.WaitFor(t, wait, func() error {
		switch got := found(); got {
		case "":
			return nil
		case "failed":
			return fmt.Errorf("s1 still finds c1 failed")
		default:
			// The three lookups are three reads: c1 may be forgotten
			// between them. One that stays inconsistent fails at the
			// deadline.
			if strings.HasPrefix(got, "inconsistent") {
				return errors.New(got)
			}
			t.Fatalf("s1's lookups of failed c1: got %q, want failed, then nothing", got)
			return nil
		}
	})
	if got := gossiptest.Status(s1, "c1"); got != 0 {
		t.Errorf("Members lists c1 as %v after the lookups forgot it, want not at all", got)
	}
}
