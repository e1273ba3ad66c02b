// Package logstream fans an agent's log out to live subscribers: the
// streams of GET /v1/agent/monitor (`cairn monitor`, `cairn debug`).
//
// A Hub wraps the agent's own slog.Handler. Every record still goes to
// that handler, filtered by its own level; a copy goes, formatted as one
// line of text (slog's TextHandler) or JSON, to each subscriber whose
// minimum level it reaches, so that a subscriber at debug sees debug lines
// while the agent's own output stays at info. Each subscriber has a
// bounded buffer: a subscriber that does not keep up loses lines, counted
// and reported to it as one "... N lines dropped" line once there is room
// again, and never slows the code that logs. With nobody subscribed the
// wrapper costs one atomic load per record.
//
// It imports nothing of cairn's. The agent wraps its logger with a Hub;
// the HTTP API subscribes through an interface of its own.
//
// Concurrency: every method may be called from any goroutine. Handle
// never blocks on a subscriber; formatting for subscribers is serialized
// per format (only while someone subscribes).
package logstream
