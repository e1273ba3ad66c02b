package events

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// TestBufferFiltersAndKeepsTheLast: an event is kept when its node,
// service and tag filters match the agent; the buffer keeps the last Size,
// oldest first, and signals each one kept.
func TestBufferFiltersAndKeepsTheLast(t *testing.T) {
	b := New("web-1", slog.New(slog.DiscardHandler))
	fire := func(id string, ev rpc.UserEvent) {
		ev.ID, ev.Name = id, "e"
		p, err := rpc.EncodeUserEvent(&ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Receive(p)
	}
	fire("svc-before-services", rpc.UserEvent{ServiceFilter: "web"})
	b.SetServices(func() []*catalog.Service { return []*catalog.Service{{ID: "w", Service: "web", Tags: []string{"v1"}}} })
	_, changed := b.List()
	fire("all", rpc.UserEvent{})
	select {
	case <-changed:
	default:
		t.Error("no signal for a kept event")
	}
	fire("node", rpc.UserEvent{NodeFilter: "^web-"})
	fire("other-node", rpc.UserEvent{NodeFilter: "^db-"})
	fire("svc-tag", rpc.UserEvent{ServiceFilter: "^web$", TagFilter: "^v1$"})
	fire("other-tag", rpc.UserEvent{ServiceFilter: "^web$", TagFilter: "^v2$"})
	fire("bad-re", rpc.UserEvent{NodeFilter: "("})
	b.Receive([]byte("garbage"))
	ids := func() []string {
		evs, _ := b.List()
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	if got, want := ids(), []string{"all", "node", "svc-tag"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for i := range Size {
		fire(string(rune('a'+i%26))+"-"+string(rune('0'+i/26)), rpc.UserEvent{})
	}
	got := ids()
	if len(got) != Size || got[0] != "a-0" || got[Size-1] != string(rune('a'+(Size-1)%26))+"-"+string(rune('0'+(Size-1)/26)) {
		t.Errorf("after %d more: kept %d, first %q last %q; want the last %d in order", Size, len(got), got[0], got[len(got)-1], Size)
	}
}
