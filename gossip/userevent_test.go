package gossip

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestUserEvents: a user event fired here or received is delivered once
// and passed on once; a copy is dropped; a payload over the limit is
// refused.
func TestUserEvents(t *testing.T) {
	p := testPool(t)
	var got []string
	p.cfg.OnUserEvent = func(b []byte) { got = append(got, string(b)) }
	d := delegate{p: p}
	if err := p.UserEvent([]byte("one")); err != nil {
		t.Fatal(err)
	}
	d.NotifyMsg(append([]byte{msgUserEvent}, "one"...)) // its own, back through gossip
	d.NotifyMsg(append([]byte{msgUserEvent}, "two"...))
	d.NotifyMsg(append([]byte{msgUserEvent}, "two"...))
	d.NotifyMsg([]byte{msgUserEvent})
	if want := []string{"one", "two"}; !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
	if n := p.broadcasts.NumQueued(); n != 2 {
		t.Errorf("%d broadcasts queued, want 2", n)
	}
	if err := p.UserEvent([]byte(strings.Repeat("x", MaxUserEventSize+1))); !errors.Is(err, ErrUserEventTooLarge) {
		t.Errorf("oversized event: got %v, want ErrUserEventTooLarge", err)
	}
}
