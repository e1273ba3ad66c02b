package consensus

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// This file makes a retried write apply at most once. A client agent
// that loses track of a write (its server hung, or the connection broke)
// sends it again elsewhere with the same request ID (rpc.WriteRequest's
// RequestID). Applying it twice would be harmless on its own (the writes
// retried are idempotent), but not after a newer write: a stopped server
// that resumes and forwards the old request would undo the newer one.
// So the FSM remembers the IDs it applied for onceWindow and skips a
// second entry with one of them. What it remembers is part of the FSM's
// state (and of snapshots), and its clock is the leader's time stamp on
// each log entry, so every server skips the same entries.

// onceWindow is how long an applied request ID is remembered. A request
// carries its caller's deadline and no server takes one past it
// (performance.rpc_hold_timeout, at most a minute, bounds a write's), so
// a copy arriving later than this is refused before it reaches Raft.
const onceWindow = 2 * time.Minute

// onceCommand is a command applied at most once per ID: Data is an
// encoded command (encodeCommand).
type onceCommand struct {
	ID   string
	Data []byte
}

// onceEntry is a request ID applied at At (the leader's time stamp on its
// log entry, Unix nanoseconds).
type onceEntry struct {
	ID string
	At int64
}

// onceLog is the FSM's memory of applied request IDs, in log order. Only
// the FSM goroutine touches it.
type onceLog struct {
	seen  map[string]struct{}
	order []onceEntry
}

// applied reports whether id was applied within the window.
func (o *onceLog) applied(id string) bool {
	_, ok := o.seen[id]
	return ok
}

// record remembers id as applied at at, forgetting what the window has
// left behind (a zero at, from a log written without time stamps,
// forgets nothing).
func (o *onceLog) record(id string, at time.Time) {
	if o.seen == nil {
		o.seen = make(map[string]struct{})
	}
	if !at.IsZero() {
		cutoff := at.Add(-onceWindow).UnixNano()
		drop := 0
		for drop < len(o.order) && o.order[drop].At < cutoff {
			delete(o.seen, o.order[drop].ID)
			drop++
		}
		o.order = o.order[drop:]
	}
	o.seen[id] = struct{}{}
	o.order = append(o.order, onceEntry{ID: id, At: at.UnixNano()})
}

// snapshot returns a copy of what is remembered.
func (o *onceLog) snapshot() []onceEntry { return append([]onceEntry(nil), o.order...) }

// restore replaces what is remembered.
func (o *onceLog) restore(entries []onceEntry) {
	o.seen = make(map[string]struct{}, len(entries))
	o.order = append([]onceEntry(nil), entries...)
	for _, e := range entries {
		o.seen[e.ID] = struct{}{}
	}
}

// applyOnce applies the command l carries inside a onceCommand unless its
// ID was applied already, and remembers the ID when it applied without
// error (a failed write may be sent again, and fails again).
func (f *fsm) applyOnce(l *raft.Log) any {
	var cmd onceCommand
	if err := decode(l.Data[1:], &cmd); err != nil {
		return fmt.Errorf("decode request at index %d: %w", l.Index, err)
	}
	if f.once.applied(cmd.ID) {
		return nil
	}
	res := f.applyCommand(l.Index, l.AppendedAt, cmd.Data)
	if err, _ := res.(error); err == nil {
		f.once.record(cmd.ID, l.AppendedAt)
	}
	return res
}

type writeIDKey struct{}

// withWriteID marks the writes made with ctx as one request of ID id,
// applied at most once ("" marks nothing). The Catalog endpoint sets it
// from the caller's rpc.WriteRequest.
func withWriteID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, writeIDKey{}, id)
}

// writeIDFrom is the request ID withWriteID put in ctx, or "".
func writeIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(writeIDKey{}).(string)
	return id
}
