package rpc

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// This file holds the wire types of the Event endpoint (user events,
// Consul's `consul event`), served by package consensus: a server checks
// event:write and gossips the event to every agent of its datacenter,
// each of which keeps the last ones it received. Fields are only ever
// added.

// EventEndpoint is the name the Event endpoint is registered under on the
// Server.
const EventEndpoint = "Event"

// MethodEventFire gossips a user event in a datacenter (EventFireRequest
// → struct{}).
const MethodEventFire = EventEndpoint + ".Fire"

// UserEventSizeLimit is the most bytes a user event's name and payload
// may hold together (serf's default, which Consul keeps).
const UserEventSizeLimit = 512

// UserEvent is one user event, in Consul's JSON shape (its Payload is
// base64 in JSON). ID is a UUID the firing agent gives it; the filters are
// regular expressions an agent matches against its node name, and its
// services' names and tags, before it keeps the event.
type UserEvent struct {
	ID            string
	Name          string
	Payload       []byte
	NodeFilter    string
	ServiceFilter string
	TagFilter     string
	Version       int
	LTime         uint64
}

// EventFireRequest fires Event in Datacenter.
type EventFireRequest struct {
	WriteRequest
	Event UserEvent
}

// EncodeUserEvent is what the servers gossip for e.
func EncodeUserEvent(e *UserEvent) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode user event: %w", err)
	}
	return b, nil
}

// DecodeUserEvent reads what EncodeUserEvent wrote; anything else is an
// error.
func DecodeUserEvent(b []byte) (*UserEvent, error) {
	var e UserEvent
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("decode user event: %w", err)
	}
	if e.ID == "" || e.Name == "" {
		return nil, fmt.Errorf("decode user event: no ID or name")
	}
	return &e, nil
}

// EventIndex is the index Consul's clients expect for the event of the
// given UUID (api.Event.IDToIndex): the XOR of its two halves. 0 for
// anything that is not a UUID.
func EventIndex(id string) uint64 {
	if len(id) != 36 {
		return 0
	}
	lo, err1 := strconv.ParseUint(id[0:8]+id[9:13]+id[14:18], 16, 64)
	hi, err2 := strconv.ParseUint(id[19:23]+id[24:36], 16, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return lo ^ hi
}
