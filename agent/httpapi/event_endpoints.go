package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/rpc"
)

// This file holds the user events (Consul's `consul event` and `watch
// -type event`): PUT /v1/event/fire/<name> asks a server, which checks
// event:write, to gossip an event in the datacenter; GET /v1/event/list
// lists the events this agent received (Events).

// Events is the agent's last user events (package agent/events satisfies
// it).
type Events interface {
	// List returns the events kept, oldest first, and a channel closed
	// when another one is kept.
	List() ([]*rpc.UserEvent, <-chan struct{})
}

// newEventID returns a random UUID (version 4).
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// eventFire answers PUT /v1/event/fire/<name>[?dc][?node][?service][?tag]
// with the event fired (its ID): the body is its payload.
func (s *Server) eventFire(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ev := rpc.UserEvent{ID: newEventID(), Name: r.PathValue("name"), NodeFilter: q.Get("node"),
		ServiceFilter: q.Get("service"), TagFilter: q.Get("tag")}
	if ev.TagFilter != "" && ev.ServiceFilter == "" {
		return badRequest("tag", "Cannot provide tag filter without service filter.")
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rpc.UserEventSizeLimit))
	if err != nil {
		return badRequest("body", "user event exceeds the limit of %d bytes", rpc.UserEventSizeLimit)
	}
	if len(payload) > 0 {
		ev.Payload = payload
	}
	args := &rpc.EventFireRequest{WriteRequest: rpc.WriteRequest{Datacenter: strings.ToLower(q.Get("dc"))}, Event: ev}
	if err := s.door.RPC(r.Context(), rpc.MethodEventFire, args, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &ev)
	return nil
}

// eventList answers GET /v1/event/list[?name]: the events this agent
// received whose names the token may read (event:read), oldest first.
// X-Consul-Index is the last event's ID as a number (Consul's
// IDToIndex), 1 without one; a request with ?index waits until the index
// differs, up to ?wait, as Consul's: event IDs are not ordered, so the
// wait is for a change, not for a greater index.
func (s *Server) eventList(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Events == nil {
		return notFound("user events are not available on this agent")
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	authz, err := s.authorizer(r)
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("name")
	ctx := r.Context()
	if opts.MinQueryIndex > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.BlockingTimeout(rpc.DefaultBlockingLimits()))
		defer cancel()
	}
	for {
		all, changed := s.deps.Events.List()
		out := make([]*rpc.UserEvent, 0, len(all))
		for _, ev := range all {
			if (name == "" || ev.Name == name) && (authz == nil || authz.EventRead(ev.Name)) {
				out = append(out, ev)
			}
		}
		index := uint64(1)
		if len(out) > 0 {
			index = max(rpc.EventIndex(out[len(out)-1].ID), 1)
		}
		if opts.MinQueryIndex == 0 || index != opts.MinQueryIndex || ctx.Err() != nil {
			if r.Context().Err() != nil {
				return r.Context().Err()
			}
			w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
			writeJSONPretty(w, r, out)
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}
