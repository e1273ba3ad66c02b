package logstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Hub.
type Config struct {
	// BufferLines is how many lines each subscriber's buffer holds before
	// lines are dropped for it. Default 512: a burst of debug lines while
	// the reader (an HTTP client) is a round trip behind.
	BufferLines int
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{BufferLines: 512}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	if c.BufferLines < 1 {
		return fmt.Errorf("logstream BufferLines: must be at least 1, got %d", c.BufferLines)
	}
	return nil
}

// noSubscriber is Hub.min when nobody subscribes: above every level.
const noSubscriber = math.MaxInt64

// Hub is the fan-out: Handler is the agent's logging handler, Subscribe
// adds a live reader.
type Hub struct {
	cfg  Config
	root *handler

	mu sync.Mutex // serializes changes to subs and min
	// subs is the current subscribers, replaced (never changed in place)
	// on each Subscribe and cancel, so that Handle reads it without a lock.
	subs atomic.Pointer[[]*subscriber]
	// min is the lowest level any subscriber wants, noSubscriber when
	// there is none: the one atomic load a record costs then.
	min atomic.Int64
	// dropped counts the lines lost to slow subscribers since the start.
	dropped atomic.Uint64

	text, json formatter
}

// New returns a Hub over base, the agent's own handler, which goes on
// receiving every record its own level lets through.
func New(cfg Config, base slog.Handler) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if base == nil {
		return nil, errors.New("logstream: base handler is nil")
	}
	h := &Hub{cfg: cfg}
	h.min.Store(noSubscriber)
	h.subs.Store(&[]*subscriber{})
	// The formatters' own level never filters: Handle is called only for
	// records a subscriber wants (slog's handlers do not check Enabled in
	// Handle).
	opts := &slog.HandlerOptions{Level: slog.Level(math.MinInt)}
	h.root = &handler{
		hub:  h,
		base: base,
		text: slog.NewTextHandler(&h.text, opts),
		json: slog.NewJSONHandler(&h.json, opts),
	}
	return h, nil
}

// Handler returns the handler to log through: it passes every record to
// the base handler (when its level allows) and to the subscribers that
// want it.
func (h *Hub) Handler() slog.Handler { return h.root }

// Dropped returns how many lines subscribers have lost in all, since the
// Hub was made.
func (h *Hub) Dropped() uint64 { return h.dropped.Load() }

// Subscribe adds a subscriber that receives every record at level or
// above, each as one line ending in "\n": in slog's text format, or JSON
// when json is set. The lines must not be modified (one line may be shared
// by several subscribers). When the subscriber falls more than
// Config.BufferLines behind, lines are dropped for it, and a line "...
// N lines dropped" (at WARN) takes their place once there is room. cancel
// removes the subscriber and closes lines; it may be called more than
// once.
func (h *Hub) Subscribe(level slog.Level, json bool) (lines <-chan []byte, cancel func()) {
	s := &subscriber{level: level, json: json, ch: make(chan []byte, h.cfg.BufferLines), hub: h}
	h.mu.Lock()
	old := *h.subs.Load()
	subs := make([]*subscriber, 0, len(old)+1)
	subs = append(append(subs, old...), s)
	h.setSubs(subs)
	h.mu.Unlock()
	var once sync.Once
	return s.ch, func() { once.Do(func() { h.remove(s) }) }
}

// remove takes s out of the subscribers and closes its channel.
func (h *Hub) remove(s *subscriber) {
	h.mu.Lock()
	old := *h.subs.Load()
	subs := make([]*subscriber, 0, len(old))
	for _, o := range old {
		if o != s {
			subs = append(subs, o)
		}
	}
	h.setSubs(subs)
	h.mu.Unlock()
	// A Handle that loaded the old list may still send to s: send checks
	// closed under s.mu.
	s.mu.Lock()
	s.closed = true
	close(s.ch)
	s.mu.Unlock()
}

// setSubs publishes subs and their lowest level. Called with h.mu held.
func (h *Hub) setSubs(subs []*subscriber) {
	lowest := int64(noSubscriber)
	for _, s := range subs {
		lowest = min(lowest, int64(s.level))
	}
	h.subs.Store(&subs)
	h.min.Store(lowest)
}

// wants reports whether some subscriber wants records at l.
func (h *Hub) wants(l slog.Level) bool { return int64(l) >= h.min.Load() }

// publish formats r for the subscribers that want it (at most once per
// format) and sends it to them. from is the handler r was logged through, whose attributes and groups
// the lines carry.
func (h *Hub) publish(ctx context.Context, from *handler, r slog.Record) {
	var text, json []byte
	for _, s := range *h.subs.Load() {
		if r.Level < s.level {
			continue
		}
		var line []byte
		if s.json {
			if json == nil {
				json = h.json.format(ctx, from.json, r)
			}
			line = json
		} else {
			if text == nil {
				text = h.text.format(ctx, from.text, r)
			}
			line = text
		}
		if line != nil {
			s.send(line)
		}
	}
}

// droppedLine is the line that tells a subscriber how many it lost, in its
// format, without the logger's attributes.
func (h *Hub) droppedLine(json bool, n uint64) []byte {
	r := slog.NewRecord(time.Now(), slog.LevelWarn, fmt.Sprintf("... %d lines dropped", n), 0)
	if json {
		return h.json.format(context.Background(), h.root.json, r)
	}
	return h.text.format(context.Background(), h.root.text, r)
}

// formatter turns records into lines with one of slog's handlers writing
// into buf: the handler writes a record in one Write, within Handle, so
// holding mu across Handle gets exactly that record's line.
type formatter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write is the slog handler's output; called only from format, with mu
// held.
func (f *formatter) Write(p []byte) (int, error) { return f.buf.Write(p) }

// format returns r as h (a handler writing to f) writes it; nil if h
// fails.
func (f *formatter) format(ctx context.Context, h slog.Handler, r slog.Record) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Reset()
	if err := h.Handle(ctx, r); err != nil {
		return nil
	}
	return bytes.Clone(f.buf.Bytes())
}

// subscriber is one reader with its buffer.
type subscriber struct {
	level slog.Level
	json  bool
	hub   *Hub

	mu      sync.Mutex // serializes sends, so the drop notice lands where the lines went missing
	ch      chan []byte
	closed  bool
	dropped uint64 // lines lost since the last notice
}

// send queues line without ever blocking: a full buffer drops it. s.mu is
// held across the channel operations, which cannot block (s.mu makes this
// the only sender, and the buffer only empties meanwhile).
func (s *subscriber) send(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.dropped > 0 {
		if len(s.ch) == cap(s.ch) {
			s.lose()
			return
		}
		s.ch <- s.hub.droppedLine(s.json, s.dropped)
		s.dropped = 0
	}
	select {
	case s.ch <- line:
	default:
		s.lose()
	}
}

// lose counts one dropped line. Called with s.mu held.
func (s *subscriber) lose() {
	s.dropped++
	s.hub.dropped.Add(1)
}
