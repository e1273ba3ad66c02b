package consensus

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

func TestStatusEndpointSingleServer(t *testing.T) {
	h := startEndpoint(t, true, nil)
	var leader rpc.LeaderResponse
	h.mustCall(t, rpc.MethodStatusLeader, &rpc.StatusRequest{}, &leader)
	if leader.Leader != h.addr {
		t.Errorf("Leader: got %q, want %q", leader.Leader, h.addr)
	}
	want := []rpc.RaftServer{{ID: "s1", Address: h.addr, Leader: true, Voter: true}}
	// The bootstrap configuration is entry 1; the FSM learns so once it
	// has applied it, which may be a moment after the election.
	waittest.For(t, 10*time.Second, "status", func() error {
		var conf rpc.RaftConfigurationResponse
		if err := h.call(rpc.MethodStatusRaftConfiguration, &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: "DC1"}}, &conf); err != nil {
			return err
		}
		if !reflect.DeepEqual(conf.Servers, want) || conf.Index != 1 {
			return fmt.Errorf("RaftConfiguration: got %+v at index %d, want %+v at 1", conf.Servers, conf.Index, want)
		}
		return nil
	})
}

// TestStatusEndpointWithoutLeader: Status answers from the server's own
// state, so it answers at once even when there is no leader to ask.
func TestStatusEndpointWithoutLeader(t *testing.T) {
	h := startEndpoint(t, false, nil)
	var leader rpc.LeaderResponse
	h.mustCall(t, rpc.MethodStatusLeader, &rpc.StatusRequest{}, &leader)
	if leader.Leader != "" {
		t.Errorf("Leader: got %q, want none", leader.Leader)
	}
	var conf rpc.RaftConfigurationResponse
	h.mustCall(t, rpc.MethodStatusRaftConfiguration, &rpc.StatusRequest{}, &conf)
	if len(conf.Servers) != 0 || conf.Index != 0 {
		t.Errorf("RaftConfiguration: got %+v at index %d, want no servers at 0", conf.Servers, conf.Index)
	}
}

func TestStatusEndpointOtherDatacenter(t *testing.T) {
	h := startEndpoint(t, true, nil)
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}}
	expectRemoteError(t, h.call(rpc.MethodStatusLeader, args, &rpc.LeaderResponse{}), "Leader in dc2", ErrNoPathToDatacenter.Error())
	expectRemoteError(t, h.call(rpc.MethodStatusRaftConfiguration, args, &rpc.RaftConfigurationResponse{}), "RaftConfiguration in dc2", ErrNoPathToDatacenter.Error())
}

func TestNewStatusNeedsDatacenter(t *testing.T) {
	if _, err := NewStatus(nil, "", nil); err == nil {
		t.Error("NewStatus without a datacenter: got nil, want an error")
	}
}
