package consensus

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// Event is the RPC endpoint of user events (Consul's Internal.EventFire):
// a server checks event:write on the event's name and gossips it in its
// LAN pool, where every agent keeps the last ones it received. An event
// for another datacenter goes to a server of it first.
//
// Register it on an rpc.Server under rpc.EventEndpoint.
type Event struct {
	cat *Catalog
	lan *gossip.Pool
}

// NewEvent returns the Event endpoint of a server whose Catalog endpoint
// is cat, gossiping in the LAN pool lan.
func NewEvent(cat *Catalog, lan *gossip.Pool) (*Event, error) {
	if cat == nil || lan == nil {
		return nil, errors.New("consensus Event: a Catalog endpoint and a LAN pool are required")
	}
	return &Event{cat: cat, lan: lan}, nil
}

// RPCNeeds declares the Event endpoint's methods.
func (e *Event) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Fire": rpc.NeedToken("event", "write")}
}

// Fire gossips args.Event in the datacenter once the token may write
// events of its name.
func (e *Event) Fire(ctx context.Context, args *rpc.EventFireRequest, _ *struct{}) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardDC(ctx, rpc.MethodEventFire, args.Datacenter, &args.FromDatacenter, true, args, &struct{}{}, 0); done {
		return err
	}
	ev := args.Event
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if authz != nil && !authz.EventWrite(ev.Name) {
		return denied("event", "write", ev.Name)
	}
	if err := validateEvent(&ev); err != nil {
		return err
	}
	b, err := rpc.EncodeUserEvent(&ev)
	if err != nil {
		return err
	}
	if err := e.lan.UserEvent(b); err != nil {
		return &catalog.FieldError{Field: "Payload", Reason: err.Error()}
	}
	return nil
}

// validateEvent checks what every agent will read of ev.
func validateEvent(ev *rpc.UserEvent) error {
	switch {
	case ev.Name == "":
		return &catalog.FieldError{Field: "Name", Reason: "is required"}
	case !catalog.IsQueryID(ev.ID): // the UUID form
		return &catalog.FieldError{Field: "ID", Reason: fmt.Sprintf("must be a UUID, got %q", ev.ID)}
	case len(ev.Name)+len(ev.Payload) > rpc.UserEventSizeLimit:
		return &catalog.FieldError{Field: "Payload", Reason: fmt.Sprintf("the name and payload hold %d bytes, more than the limit of %d",
			len(ev.Name)+len(ev.Payload), rpc.UserEventSizeLimit)}
	case ev.TagFilter != "" && ev.ServiceFilter == "":
		return &catalog.FieldError{Field: "TagFilter", Reason: "needs a service filter"}
	}
	for _, f := range []struct{ field, re string }{{"NodeFilter", ev.NodeFilter}, {"ServiceFilter", ev.ServiceFilter}, {"TagFilter", ev.TagFilter}} {
		if _, err := regexp.Compile(f.re); err != nil {
			return &catalog.FieldError{Field: f.field, Reason: err.Error()}
		}
	}
	return nil
}
