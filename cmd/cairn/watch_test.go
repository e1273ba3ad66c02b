package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// answer is one fake blocking query's result; took is how long it
// "blocked" on the fake clock.
type fakeAnswer struct {
	body  string
	index uint64
	err   error
	took  time.Duration
}

// fakeWatch runs a watcher over answers on a fake clock and returns the
// indexes it asked after, the bodies it handled and the pauses it made.
// The context ends once the answers are used up.
func fakeWatch(t *testing.T, answers []fakeAnswer, handlerErr error) (asked []uint64, handled []string, pauses []time.Duration, warnings int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := time.Unix(0, 0)
	w := &watcher{
		fetch: func(_ context.Context, index uint64) ([]byte, uint64, error) {
			asked = append(asked, index)
			if len(answers) == 0 {
				cancel()
				return nil, 0, context.Canceled
			}
			a := answers[0]
			answers = answers[1:]
			clock = clock.Add(a.took)
			return []byte(a.body), a.index, a.err
		},
		handle: func(_ context.Context, body []byte) error {
			handled = append(handled, string(body))
			return handlerErr
		},
		warn: func(error) { warnings++ },
		now:  func() time.Time { return clock },
		sleep: func(_ context.Context, d time.Duration) bool {
			pauses = append(pauses, d)
			clock = clock.Add(d)
			return true
		},
	}
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
	return asked, handled, pauses, warnings
}

func TestWatchRunsHandlerOnlyOnChange(t *testing.T) {
	s := time.Second
	asked, handled, pauses, warnings := fakeWatch(t, []fakeAnswer{
		{body: "A", index: 5},                   // first answer: handled
		{body: "A", index: 5},                   // at once, unchanged: backed off
		{body: "A", index: 5},                   // again: longer
		{body: "A", index: 5, took: 5 * s},      // a full blocking wait, unchanged: no backoff
		{body: "B", index: 9, took: 2 * s},      // changed
		{body: "B2", index: 9},                  // same index: not handled
		{err: errors.New("connection refused")}, // error: backed off, warned
		{body: "C", index: 3},                   // backwards: a change
		{body: "C", index: 3},
	}, nil)
	if want := []uint64{0, 5, 5, 5, 5, 9, 9, 9, 3, 3}; !reflect.DeepEqual(asked, want) {
		t.Errorf("asked after %v, want %v", asked, want)
	}
	if want := []string{"A", "B", "C"}; !reflect.DeepEqual(handled, want) {
		t.Errorf("handled %q, want %q", handled, want)
	}
	g := watchMinGap
	if want := []time.Duration{g, s, 2 * s, g, g, s, 2 * s, g, s}; !reflect.DeepEqual(pauses, want) {
		t.Errorf("paused %v, want %v", pauses, want)
	}
	if warnings != 1 {
		t.Errorf("got %d warnings, want 1", warnings)
	}
}

func TestWatchBackoffIsBounded(t *testing.T) {
	answers := []fakeAnswer{{body: "A", index: 1}}
	for range 10 {
		answers = append(answers, fakeAnswer{body: "A", index: 1})
	}
	_, handled, pauses, _ := fakeWatch(t, answers, nil)
	if len(handled) != 1 {
		t.Errorf("handled %d times, want once", len(handled))
	}
	if last := pauses[len(pauses)-1]; last != watchBackoffMax {
		t.Errorf("last pause %s, want the cap %s (pauses %v)", last, watchBackoffMax, pauses)
	}
}

func TestWatchGoesOnAfterHandlerFails(t *testing.T) {
	_, handled, _, warnings := fakeWatch(t, []fakeAnswer{{body: "A", index: 1}, {body: "B", index: 2}}, fmt.Errorf("exit status 3"))
	if len(handled) != 2 || warnings != 2 {
		t.Errorf("handled %q with %d warnings, want both with 2", handled, warnings)
	}
}
