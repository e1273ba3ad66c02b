package cache

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a Cache. Start from DefaultConfig.
type Config struct {
	// MaxEntries bounds the number of entries; past it the least recently
	// used entry is evicted. An entry costs its value and the refetches
	// that changes to it cause. It also bounds the misses being fetched at
	// once (past it a miss fails with ErrOverloaded). Default 10,000: the
	// busiest agent of issue 6's targets (10,000 distinct names under 100
	// MB), well above the few hundred names a typical node resolves, and
	// low enough that a flood of random names cannot make the agent hold
	// unbounded memory.
	MaxEntries int
	// MaxBytes bounds the approximate memory of the entries (see Size).
	// 0 means no bytes bound. Default 0: MaxEntries alone bounds the
	// cache unless the agent knows how large its values are.
	MaxBytes int64
	// Size returns the approximate size in bytes of a value (what it
	// points to included). The cache adds the key's bytes and a fixed
	// per-entry overhead (entryOverhead). It is called when a version is
	// published, never on a hit. Nil means values count as 0 bytes; it
	// must be set when MaxBytes is. V is usually a pointer, so passing it
	// as an any does not allocate. Default nil.
	Size func(v any) int
	// IdleTimeout is how long an entry may go without being asked for
	// before it is dropped; the hub stops following a datacenter once its
	// last entry is. Default 10m (issue 6): long enough to carry a name
	// asked for every few minutes, short enough that forgotten names stop
	// costing refetches, and forgotten datacenters their feed call.
	IdleTimeout time.Duration
	// MaxStale is how long an entry is still served once out of contact
	// with the servers (its datacenter's feed, or its refetch, failing);
	// past it the entry is dropped and Get reports the fetch error. Default 72h (issue 6; Consul's
	// default dns_config.max_stale is 10 years, RFC 8767 suggests 1 to 3
	// days): a weekend-long server outage does not take DNS down with it.
	MaxStale time.Duration
	// StaleAfter is how long after the last contact with the servers an
	// entry's answers count as stale (Info.Stale, the StaleAnswers
	// counter). Default 5s: a retry or two has had its chance, so the
	// outage is real, and the DNS layer should switch to short TTLs.
	StaleAfter time.Duration
	// BlockingWait is the wait (MaxQueryTime) of a Hub's feed calls,
	// jittered by ±10% so datacenters followed together do not return
	// together; NewHub reads it, a cache does not. Default 5m (Consul's
	// default blocking wait): a change comes back at once whatever the
	// wait; a longer one costs fewer empty round trips.
	BlockingWait time.Duration
	// FetchTimeout bounds the fetch of a miss, so that a name never seen
	// before fails quickly when no server is reachable (SERVFAIL, not a
	// resolver's timeout), and a refetch; a Hub adds it to its feed
	// calls' wait as their deadline. Default 3s: a cross-datacenter read has room,
	// and a stub resolver (usually 5s per try) still gets its SERVFAIL.
	FetchTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed feed calls
	// of one datacenter (a Hub's) and between failed refetches of one
	// entry: the wait doubles from RetryMin up to RetryMax, and each wait
	// is jittered down to half its value. RetryMin also paces a feed that
	// returns early without news. Defaults 100ms and 30s: a
	// leader election (a second or two) is ridden out in a few quick
	// retries, and 10,000 entries facing a dead cluster send a few hundred
	// attempts per second, not a storm.
	RetryMin time.Duration
	RetryMax time.Duration
	// Hub is the hub whose feeds keep the entries fresh, shared with other
	// caches (one feed per datacenter for all of them); New
	// requires it. The caches must be closed before the hub. Default nil:
	// DefaultConfig cannot know the feed; set it from NewHub.
	Hub *Hub
	// RefreshAfter returns how long an entry holding v may
	// go without a refetch while the feed names no change to it; 0 means
	// for as long as the feed says nothing. It is for values that depend
	// on data the feed does not follow, such as a prepared query's answer
	// from a failover datacenter. Called, like Size, when a version is
	// published. Default nil: entries change only when the feed says so.
	RefreshAfter func(v any) time.Duration
}

// entryOverhead is the approximate bytes an entry costs beyond its key
// and value when MaxBytes is in force: the slot, the Entry, the table and
// LRU nodes; about 700 measured (amd64, Go 1.26: the heap growth of 10,000
// entries of one shared value), rounded up. It was 3 KiB while each entry
// also had a goroutine of its own.
const entryOverhead = 1 << 10

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		MaxEntries:   10_000,                 // issue 6's target; see the field's doc
		MaxBytes:     0,                      // no bytes bound unless Size is given
		IdleTimeout:  10 * time.Minute,       // issue 6
		MaxStale:     72 * time.Hour,         // issue 6; RFC 8767 range
		StaleAfter:   5 * time.Second,        // a couple of failed retries
		BlockingWait: 5 * time.Minute,        // Consul's default wait
		FetchTimeout: 3 * time.Second,        // SERVFAIL before a stub resolver gives up
		RetryMin:     100 * time.Millisecond, // rides out a leader election
		RetryMax:     30 * time.Second,       // bounded load on a dead cluster
		// Size: nil, values count as 0 bytes.
	}
}

// Validate reports every invalid field of c, each error naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("cache: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.MaxEntries <= 0 {
		bad("MaxEntries", "must be positive, got %d", c.MaxEntries)
	}
	if c.MaxBytes < 0 {
		bad("MaxBytes", "must not be negative, got %d", c.MaxBytes)
	}
	if c.MaxBytes > 0 && c.Size == nil {
		bad("MaxBytes", "needs Size to measure values")
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"IdleTimeout", c.IdleTimeout}, {"MaxStale", c.MaxStale}, {"BlockingWait", c.BlockingWait},
		{"FetchTimeout", c.FetchTimeout}, {"RetryMin", c.RetryMin}, {"RetryMax", c.RetryMax}} {
		if d.d <= 0 {
			bad(d.field, "must be positive, got %s", d.d)
		}
	}
	if c.StaleAfter < 0 || c.StaleAfter > c.MaxStale {
		bad("StaleAfter", "must be between 0 and MaxStale (%s), got %s", c.MaxStale, c.StaleAfter)
	}
	if c.RetryMax < c.RetryMin {
		bad("RetryMax", "must not be below RetryMin (%s), got %s", c.RetryMin, c.RetryMax)
	}
	return errors.Join(errs...)
}
