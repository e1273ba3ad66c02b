package cache_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/cache"
)

// answer is the value the tests cache: a name's instances, none for a
// name that does not exist (a negative entry). A pointer, as the agent's
// answer sets will be.
type answer struct{ instances []string }

// errDown is what the fake servers return while they are unreachable.
var errDown = errors.New("no server reachable")

// fakeCatalog is a tiny stand-in for the servers: names with instances
// under one index (as one memdb table's), plain reads of them (the
// Fetcher), and a change feed (the Feed) whose calls block on a channel
// closed at every change, as Consul's blocking queries do. Every
// datacenter sees the same catalog.
type fakeCatalog struct {
	mu      sync.Mutex
	index   uint64
	names   map[string][]string
	changed chan struct{} // closed and replaced at every change
	err     error         // returned by every fetch while set
	feedErr error         // returned by every feed call while set (and err is not)
	hold    chan struct{} // while non-nil, plain reads wait for it to close (or ctx)
	calls   map[string]int
	plain   int      // fetches with minIndex 0
	mins    []uint64 // every fetch's minIndex, in order
	// log names the name each change touched, by index, for the feed.
	log   map[uint64]string
	feeds int                 // feed calls
	open  map[string]int      // feed calls in progress, by datacenter
	fmins map[string][]uint64 // every feed call's minIndex, by datacenter, in order
	stops map[string]int      // Stop calls, by datacenter
	// late, while non-nil, makes plain reads read first and then wait for
	// it: a read whose answer predates what happens meanwhile.
	late chan struct{}
}

// newFake returns an empty catalog; inside a synctest bubble, create it
// inside the bubble (its channels belong to it).
func newFake() *fakeCatalog {
	return &fakeCatalog{names: map[string][]string{}, changed: make(chan struct{}), calls: map[string]int{},
		log: map[uint64]string{}, open: map[string]int{}, fmins: map[string][]uint64{}, stops: map[string]int{}}
}

// fetch is the cache.Fetcher: a plain read for minIndex 0 (all the cache
// asks for), else a blocking query that returns when the index passes
// minIndex (or, if it is lower, when wait ends, as a Consul server does).
func (f *fakeCatalog) fetch(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*answer, uint64, error) {
	f.mu.Lock()
	f.calls[key.Name]++
	f.mins = append(f.mins, minIndex)
	if minIndex == 0 {
		f.plain++
	}
	hold := f.hold
	f.mu.Unlock()
	if hold != nil && minIndex == 0 {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	var timeout <-chan time.Time
	if minIndex > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		f.mu.Lock()
		err, idx, ch, late := f.err, f.index, f.changed, f.late
		ans := &answer{instances: slices.Clone(f.names[key.Name])}
		f.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if late != nil && minIndex == 0 {
			select {
			case <-late:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		if minIndex == 0 || idx > minIndex {
			return ans, idx, nil
		}
		select {
		case <-ch:
		case <-timeout:
			minIndex = 0 // answer with what there is
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// changeLocked moves the index and wakes the blocked fetches.
func (f *fakeCatalog) changeLocked() {
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeCatalog) register(name string, instances ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[name] = append(f.names[name], instances...)
	f.changeLocked()
	f.log[f.index] = name
}

// feed is the fake's cache.Feed: a follower of dc over the change log
// (next), which counts its Stop.
func (f *fakeCatalog) feed(dc string) cache.Follower { return &fakeFollower{f: f, dc: dc} }

type fakeFollower struct {
	f       *fakeCatalog
	dc      string
	stopped bool
}

func (ff *fakeFollower) Next(ctx context.Context, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	if ff.stopped {
		panic("Next of " + ff.dc + " after Stop")
	}
	return ff.f.next(ctx, ff.dc, minIndex, wait)
}

func (ff *fakeFollower) Stop() {
	ff.stopped = true
	ff.f.mu.Lock()
	defer ff.f.mu.Unlock()
	ff.f.stops[ff.dc]++
}

// stopsFor returns how many times the hub stopped following dc.
func (f *fakeCatalog) stopsFor(dc string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops[dc]
}

// next answers a follower's Next over the change log: reset for minIndex 0 or an
// index ahead of the catalog's (a restore), else the names changed after
// minIndex once there are any, or none when wait ends.
func (f *fakeCatalog) next(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	f.mu.Lock()
	f.feeds++
	f.open[dc]++
	f.fmins[dc] = append(f.fmins[dc], minIndex)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.open[dc]--; f.open[dc] == 0 {
			delete(f.open, dc)
		}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		f.mu.Lock()
		err, idx, ch := cmp.Or(f.err, f.feedErr), f.index, f.changed
		changed := map[string]bool{}
		for i := minIndex + 1; i <= idx; i++ {
			changed[f.log[i]] = true
		}
		f.mu.Unlock()
		switch {
		case err != nil:
			return 0, nil, false, err
		case minIndex == 0 || minIndex > idx:
			return idx, nil, true, nil
		case idx > minIndex:
			return idx, func(k cache.Key) bool { return changed[k.Name] }, false, nil
		}
		select {
		case <-ch:
		case <-t.C:
			return idx, func(cache.Key) bool { return false }, false, nil
		case <-ctx.Done():
			return 0, nil, false, ctx.Err()
		}
	}
}

func (f *fakeCatalog) setLate(ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.late = ch
}

func (f *fakeCatalog) feedCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.feeds
}

// openFeeds returns how many feed calls for dc are in progress.
func (f *fakeCatalog) openFeeds(dc string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open[dc]
}

// feedMinIndexes returns the minIndex of every feed call for dc so far.
func (f *fakeCatalog) feedMinIndexes(dc string) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fmins[dc])
}

// restore replaces the catalog's state and index with older ones, as a
// server restored from a snapshot has: the index goes backwards.
func (f *fakeCatalog) restore(index uint64, names map[string][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = names
	f.changeLocked()
	f.index = index
}

// fail makes every fetch fail with err (nil: servers back), waking the
// blocked ones.
// failFeed makes the feed fail with err (nil: work again) while plain
// reads still answer: servers that do not serve the feed's RPC.
func (f *fakeCatalog) failFeed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.feedErr = err
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeCatalog) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeCatalog) setHold(ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = ch
}

func (f *fakeCatalog) callsFor(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeCatalog) plainReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plain
}

func (f *fakeCatalog) minIndexes() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.mins)
}
