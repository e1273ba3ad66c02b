package consensus

import (
	"math"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// LeadershipChanged returns a channel that is closed the next time this
// server gains or loses leadership. It is a level-triggered signal: take
// the channel first, then read IsLeader, then wait on the channel, and no
// change is missed however slow the reader is; several changes in a row
// close one channel. Any number of goroutines may wait on it.
//
//	for {
//		changed := s.LeadershipChanged()
//		if s.IsLeader() { … } else { … }
//		select {
//		case <-changed:
//		case <-ctx.Done():
//			return
//		}
//	}
//
// After Shutdown the channel returned is never closed.
func (s *Server) LeadershipChanged() <-chan struct{} {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	return s.leaderChanged
}

// watchLeadership drains raft's NotifyCh, which raft blocks on, into the
// LeadershipChanged broadcast, until Shutdown closes s.stop (after Raft
// has stopped, so raft never blocks on a channel nobody reads).
func (s *Server) watchLeadership(notify <-chan bool) {
	for {
		select {
		case leader := <-notify:
			s.logger.Info("leadership changed", "leader", leader)
			s.leaderMu.Lock()
			close(s.leaderChanged)
			s.leaderChanged = make(chan struct{})
			s.leaderMu.Unlock()
		case <-s.stop:
			return
		}
	}
}

// LeaderObserved returns a channel that is closed the next time Raft on
// this server sees the leader change: a new leader, or none (its leader
// went quiet and an election began). A forward to the old leader can then
// stop waiting on it. As LeadershipChanged, take the channel before
// reading Leader, and no change is missed.
func (s *Server) LeaderObserved() <-chan struct{} {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	return s.leaderSeen
}

// watchLeader registers a Raft observer of leader changes and turns them
// into the LeaderObserved broadcast, until Shutdown. The observer does not
// block Raft: an observation that finds the buffer full is dropped, and
// the one that follows it still wakes the waiters.
func (s *Server) watchLeader() {
	obs := make(chan raft.Observation, 8)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(o)
	s.wg.Go(func() {
		defer s.raft.DeregisterObserver(o)
		for {
			select {
			case <-obs:
				s.leaderMu.Lock()
				close(s.leaderSeen)
				s.leaderSeen = make(chan struct{})
				s.leaderMu.Unlock()
			case <-s.stop:
				return
			}
		}
	})
}

// LeaderID returns the Raft ID of the current leader, or ""
// when none is known.
func (s *Server) LeaderID() string {
	_, id := s.raft.LeaderWithID()
	return string(id)
}

// LastContact is how long ago this server last heard from the leader: 0
// on the leader itself, and math.MaxInt64 (so that any staleness bound
// refuses it) on a server that has never heard from one.
func (s *Server) LastContact() time.Duration {
	if s.raft.State() == raft.Leader {
		return 0
	}
	last := s.raft.LastContact()
	if last.IsZero() {
		return math.MaxInt64
	}
	return time.Since(last)
}

// RaftStats returns hashicorp/raft's statistics of this server (state,
// term, last_log_index, commit_index, applied_index, num_peers,
// last_contact, …): the "raft" section of Consul's /v1/agent/self Stats,
// whose keys they are.
func (s *Server) RaftStats() map[string]string { return s.raft.Stats() }

// Term returns the Raft term this server is in.
func (s *Server) Term() uint64 {
	t, _ := strconv.ParseUint(s.raft.Stats()["term"], 10, 64)
	return t
}
