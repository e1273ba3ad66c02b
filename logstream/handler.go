package logstream

import (
	"context"
	"log/slog"
)

// handler is the Hub's slog.Handler: the base handler and, for the
// subscribers, a text and a JSON formatter, all three carrying the same
// attributes and groups (WithAttrs and WithGroup apply to each).
type handler struct {
	hub        *Hub
	base       slog.Handler
	text, json slog.Handler // write into hub.text and hub.json
}

var _ slog.Handler = (*handler)(nil)

// Enabled reports whether the base handler or some subscriber wants
// records at l: with nobody subscribed, one atomic load added to the base
// handler's own check.
func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.hub.wants(l) || h.base.Enabled(ctx, l)
}

// Handle passes r to the base handler if its level allows, and to the
// subscribers that want it. Only the base handler's error is returned: a
// subscriber that cannot keep up loses lines, it does not fail the log
// call.
func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.base.Enabled(ctx, r.Level) {
		err = h.base.Handle(ctx, r)
	}
	if h.hub.wants(r.Level) {
		h.hub.publish(ctx, h, r)
	}
	return err
}

// WithAttrs returns a handler whose records carry attrs, in the base
// handler's output and in the subscribers' lines.
func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &handler{hub: h.hub, base: h.base.WithAttrs(attrs), text: h.text.WithAttrs(attrs), json: h.json.WithAttrs(attrs)}
}

// WithGroup returns a handler that puts the attributes that follow in
// group name ("" is no group, as slog says).
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{hub: h.hub, base: h.base.WithGroup(name), text: h.text.WithGroup(name), json: h.json.WithGroup(name)}
}
