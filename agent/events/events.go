// Package events keeps the user events an agent received through gossip
// (Consul's `consul event`): the last Size of them that match the agent
// (their node, service and tag filters), in the order received, for GET
// /v1/event/list and the watches that block on it. It starts nothing.
package events

import (
	"log/slog"
	"regexp"
	"sync"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Size is how many events an agent keeps (Consul's 256).
const Size = 256

// Buffer is an agent's last user events. Its methods may be called from
// any goroutine.
type Buffer struct {
	node   string
	logger *slog.Logger

	mu       sync.Mutex
	services func() []*catalog.Service // nil until SetServices
	events   []*rpc.UserEvent          // a ring of Size, oldest at next once full
	next     int
	changed  chan struct{} // closed and replaced on every event kept
}

// New returns the buffer of the agent of node name node.
func New(node string, logger *slog.Logger) *Buffer {
	return &Buffer{node: node, logger: logger.With("component", "events"), changed: make(chan struct{})}
}

// SetServices gives the buffer the agent's own services, for the events'
// service and tag filters: until then, an event with a service filter
// matches nothing (the agent has no service yet).
func (b *Buffer) SetServices(services func() []*catalog.Service) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.services = services
}

// Receive takes a gossiped event (gossip.Config.OnUserEvent): kept when
// its filters match this agent, dropped otherwise. It does not block.
func (b *Buffer) Receive(payload []byte) {
	ev, err := rpc.DecodeUserEvent(payload)
	if err != nil {
		b.logger.Debug("dropped a user event", "err", err)
		return
	}
	if !b.matches(ev) {
		return
	}
	b.logger.Debug("user event", "name", ev.Name, "id", ev.ID)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.events) < Size {
		b.events = append(b.events, ev)
	} else {
		b.events[b.next] = ev
		b.next = (b.next + 1) % Size
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// matches applies the event's filters, as Consul's agents do: the node
// filter to the node name, the service filter to a service's name and the
// tag filter to that service's tags. A filter that does not compile
// matches nothing.
func (b *Buffer) matches(ev *rpc.UserEvent) bool {
	if ev.NodeFilter != "" && !match(ev.NodeFilter, b.node) {
		return false
	}
	if ev.ServiceFilter == "" {
		return true
	}
	b.mu.Lock()
	services := b.services
	b.mu.Unlock()
	if services == nil {
		return false
	}
	for _, svc := range services() {
		if !match(ev.ServiceFilter, svc.Service) {
			continue
		}
		if ev.TagFilter == "" {
			return true
		}
		for _, tag := range svc.Tags {
			if match(ev.TagFilter, tag) {
				return true
			}
		}
	}
	return false
}

func match(expr, s string) bool {
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(s)
}

// List returns the events kept, oldest first, and a channel closed when
// another one is kept.
func (b *Buffer) List() ([]*rpc.UserEvent, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*rpc.UserEvent, 0, len(b.events))
	out = append(out, b.events[b.next:]...)
	out = append(out, b.events[:b.next]...)
	return out, b.changed
}
