package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The workload's data. Every write goes through a client agent's HTTP API.
const (
	// kvService's instances are the registers: one per key (its service
	// ID), on the external node kvNode, the value in Meta "v". A write is
	// PUT /v1/catalog/register; a read is GET /v1/catalog/service/kv
	// ?consistent, which reads every key at once.
	kvService = "kv"
	kvNode    = "kv-node"
	numKeys   = 16 // few enough that a write overwrites another, many enough that reads see most values
	// setService's instances are registered once each under a unique ID
	// (w<writer>-<seq>) on kvNode and maybe deregistered later: a set.
	setService = "u"
	// agentService's instances are registered through the client agent's
	// own API (PUT /v1/agent/service/register), which stores them in the
	// agent and pushes them to the servers (anti-entropy retries a push
	// that failed).
	agentService = "a"
	// kvPrefix holds the second family of registers, in the key/value
	// store: key kvPrefix+"k<n>", written with PUT /v1/kv/<key> (not
	// idempotent: a write whose fate is unknown is not sent again, which
	// makes a stale overwrite, issue 28's finding 2, possible), read with
	// GET /v1/kv/<kvPrefix>?recurse&consistent.
	kvPrefix = "r/"

	writersPerClient = 3
	readersPerClient = 2
	// writeTimeout outlasts the agents' rpc_hold_timeout (7s), when an
	// agent answers a write whose fate it does not know: 503, settled
	// from then on (checker's settleBound), where a timeout here would
	// leave it unknown for ever.
	writeTimeout = 9 * time.Second
	readTimeout  = 3 * time.Second
	pause        = 20 * time.Millisecond // between one worker's operations
)

type opKind int

const (
	opWrite         opKind = iota // kv: key = value
	opRead                        // kv: every key
	opRegister                    // set: add key
	opDeregister                  // set: remove key
	opAgentRegister               // agent service key
	opReadSet                     // set: every member
	opKVWrite                     // kv store: key = value
	opKVRead                      // kv store: every key
)

var kindNames = [...]string{"write", "read", "register", "deregister", "agent-register", "read-set", "kv-write", "kv-read"}

func (k opKind) String() string { return kindNames[k] }

// isWrite says whether the operation changes the catalog.
func (k opKind) isWrite() bool { return k != opRead && k != opReadSet && k != opKVRead }

type outcome int

const (
	ok      outcome = iota // 200: it happened
	failed                 // 4xx: it did not
	unknown                // 5xx, timeout, broken connection: it may have
)

var outcomeNames = [...]string{"ok", "fail", "unknown"}

func (o outcome) String() string { return outcomeNames[o] }

// op is one operation of the history. Times are since the history's epoch.
type op struct {
	kind       opKind
	client     string // the agent it went through
	worker     int
	key, value string
	start, end time.Duration
	outcome    outcome
	status     int // HTTP status; 0 when none came back
	errText    string
	values     map[string]string // opRead: key → value of every key present
	members    map[string]bool   // opReadSet
}

// history records every operation of a scenario; safe for concurrent use.
type history struct {
	epoch time.Time
	mu    sync.Mutex
	ops   []*op
}

func newHistory() *history { return &history{epoch: time.Now()} }

func (h *history) now() time.Duration { return time.Since(h.epoch) }

func (h *history) add(o *op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

// snapshot returns the operations recorded so far.
func (h *history) snapshot() []*op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// workload runs the writers and readers of a scenario against the client
// agents until stop is called.
type workload struct {
	h     *history
	http  *http.Client
	stopC chan struct{}
	wg    sync.WaitGroup
}

func startWorkload(h *history, clients []*agent) *workload {
	w := &workload{h: h, stopC: make(chan struct{}), http: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: writersPerClient + readersPerClient, IdleConnTimeout: time.Minute,
	}}}
	id := 0
	for _, c := range clients {
		for range writersPerClient {
			worker := id
			w.wg.Go(func() { w.writer(c, worker) })
			id++
		}
	}
	for _, c := range clients {
		for r := range readersPerClient {
			worker := id
			w.wg.Go(func() { w.reader(c, worker, r) })
			id++
		}
	}
	return w
}

// stop asks every worker to finish its operation and waits for them.
func (w *workload) stop() {
	close(w.stopC)
	w.wg.Wait()
	w.http.CloseIdleConnections()
}

func (w *workload) stopped() bool {
	select {
	case <-w.stopC:
		return true
	default:
		return false
	}
}

// writer writes through client c: a quarter register writes in the
// catalog, a quarter in the kv store, a quarter set registrations, an
// eighth deregistrations of members it registered, and an eighth agent
// registrations.
func (w *workload) writer(c *agent, worker int) {
	var live []string // set members this writer registered and has not deregistered
	for seq := 0; !w.stopped(); seq++ {
		unique := fmt.Sprintf("w%d-%d", worker, seq)
		o := &op{client: c.name, worker: worker}
		var method, path, body string
		r := rand.Float64()
		if r >= 0.75 && r < 0.88 && len(live) == 0 {
			r = 0.5 // nothing to deregister yet: register instead
		}
		switch {
		case r < 0.25:
			o.kind, o.key, o.value = opWrite, fmt.Sprintf("k%d", rand.IntN(numKeys)), unique
			method, path, body = http.MethodPut, "/v1/catalog/register", catalogBody(o.key, kvService, o.value)
		case r < 0.5:
			o.kind, o.key, o.value = opKVWrite, fmt.Sprintf("k%d", rand.IntN(numKeys)), unique
			method, path, body = http.MethodPut, "/v1/kv/"+kvPrefix+o.key, o.value
		case r < 0.75:
			o.kind, o.key = opRegister, unique
			method, path, body = http.MethodPut, "/v1/catalog/register", catalogBody(o.key, setService, "")
		case r < 0.88:
			i := rand.IntN(len(live))
			o.kind, o.key = opDeregister, live[i]
			live = slices.Delete(live, i, i+1) // whatever the outcome: one attempt per member
			method, path = http.MethodPut, "/v1/catalog/deregister"
			body = fmt.Sprintf(`{"Node": %q, "ServiceID": %q}`, kvNode, o.key)
		default:
			o.kind, o.key = opAgentRegister, "a-"+unique
			method, path = http.MethodPut, "/v1/agent/service/register"
			body = fmt.Sprintf(`{"ID": %q, "Name": %q, "Port": 1}`, o.key, agentService)
		}
		w.do(c, o, method, path, body, writeTimeout)
		if o.kind == opRegister && o.outcome == ok {
			live = append(live, o.key)
		}
		time.Sleep(pause)
	}
}

// catalogBody registers service id of name on kvNode, with Meta v=value
// when value is set.
func catalogBody(id, name, value string) string {
	meta := ""
	if value != "" {
		meta = fmt.Sprintf(`, "Meta": {"v": %q}`, value)
	}
	return fmt.Sprintf(`{"Node": %q, "Address": "192.0.2.1", "Service": {"ID": %q, "Service": %q, "Port": 1%s}}`,
		kvNode, id, name, meta)
}

// reader reads the catalog's registers, the set and the kv store's
// registers through client c, in turn (starting with the one its number
// says, so that readers of a client read two at once).
func (w *workload) reader(c *agent, worker, first int) {
	for i := first; !w.stopped(); i++ {
		o := &op{kind: opRead, client: c.name, worker: worker}
		path := "/v1/catalog/service/" + kvService + "?consistent"
		switch i % 3 {
		case 1:
			o.kind, path = opReadSet, "/v1/catalog/service/"+setService+"?consistent"
		case 2:
			o.kind, path = opKVRead, kvReadPath
		}
		w.do(c, o, http.MethodGet, path, "", readTimeout)
		time.Sleep(pause)
	}
}

// do runs one request and records it. A read's body is decoded into the
// op's values or members.
func (w *workload) do(c *agent, o *op, method, path, body string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o.start = w.h.now()
	status, resp, err := call(ctx, w.http, method, c.httpURL()+path, body)
	o.end = w.h.now()
	o.status = status
	switch {
	case err != nil:
		o.outcome, o.errText = unknown, err.Error()
	case status == http.StatusOK:
		o.outcome = ok
	case status >= 400 && status < 500:
		o.outcome, o.errText = failed, string(bytes.TrimSpace(resp))
	default:
		o.outcome, o.errText = unknown, string(bytes.TrimSpace(resp))
	}
	if o.outcome == ok && !o.kind.isWrite() {
		var err error
		decode := decodeInstances
		if o.kind == opKVRead {
			decode = decodeKV
		}
		if o.values, o.members, err = decode(resp); err != nil {
			o.outcome, o.errText = failed, err.Error() // not used by the checker
		}
	}
	w.h.add(o)
}

// call sends one request and returns the status and body.
func call(ctx context.Context, client *http.Client, method, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, b, nil
}

// decodeInstances reads a /v1/catalog/service/<name> answer: each
// instance's value (Meta "v") by service ID, and the set of IDs.
func decodeInstances(b []byte) (map[string]string, map[string]bool, error) {
	var insts []struct {
		ServiceID   string
		ServiceMeta map[string]string
	}
	if err := json.Unmarshal(b, &insts); err != nil {
		return nil, nil, fmt.Errorf("undecodable instances %q: %w", b, err)
	}
	values, members := make(map[string]string, len(insts)), make(map[string]bool, len(insts))
	for _, in := range insts {
		values[in.ServiceID] = in.ServiceMeta["v"]
		members[in.ServiceID] = true
	}
	return values, members, nil
}

// kvReadPath reads every kv store register, consistently.
const kvReadPath = "/v1/kv/" + kvPrefix + "?recurse&consistent"

// decodeKV reads a GET /v1/kv/<kvPrefix>?recurse answer: each register's
// value by its key (kvPrefix cut off), and the set of keys. A 404 (no
// key yet) is decoded as empty by the caller.
func decodeKV(b []byte) (map[string]string, map[string]bool, error) {
	var entries []struct {
		Key   string
		Value []byte
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, nil, fmt.Errorf("undecodable entries %q: %w", b, err)
	}
	values, members := make(map[string]string, len(entries)), make(map[string]bool, len(entries))
	for _, e := range entries {
		k := strings.TrimPrefix(e.Key, kvPrefix)
		values[k], members[k] = string(e.Value), true
	}
	return values, members, nil
}
