package catalog

import (
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-memdb"
)

// Changes says which names' answers may differ after an index: the feed an
// agent's cache follows with one blocking query, instead of one blocking
// query per cached name. It is deliberately coarse (a name, not what
// about it changed): the reader refetches what it holds of those names.
type Changes struct {
	// Index is the store's index as of these changes; the next call
	// blocks on it.
	Index uint64
	// Services are the lowercased names of services whose instances may
	// have changed: registered, deregistered, edited, a check of theirs
	// or of their node changed, or their node changed.
	Services []string
	// Nodes are the lowercased names of nodes whose node row (address,
	// meta) may have changed, or that were registered or removed.
	Nodes []string
	// Queries are the lowercased IDs and names of prepared queries that
	// were defined, changed or deleted.
	Queries []string
	// Reset says the log does not reach back to the index asked about (it
	// was trimmed, the store was restored from a snapshot, or the index is
	// ahead of the store's): anything may have changed.
	Reset bool
}

// changeLogSize is how many writes the log remembers. A reader further
// behind than that (a cache whose feed was cut for longer) gets Reset and
// refetches everything it holds, which is what it would have to do
// anyway after missing that much.
const changeLogSize = 4096

// changeLog remembers which names each recent write touched. It belongs
// to one store generation: Restore starts a new one.
type changeLog struct {
	mu      sync.Mutex
	entries []changeEntry // oldest first, at most changeLogSize
	// floor is the index up to which the log knows nothing: a reader at
	// or above it is answered from entries, one below it gets Reset.
	floor  uint64
	notify chan struct{} // closed and replaced by every append
}

type changeEntry struct {
	index                    uint64
	services, nodes, queries []string
	// acl marks a change of ACL data: who may read what changed, so a
	// reader across it starts over (Reset) rather than refetch names.
	acl bool
}

func newChangeLog(floor uint64) *changeLog {
	return &changeLog{floor: floor, notify: make(chan struct{})}
}

// last returns the index of the newest entry, or the floor when empty.
func (l *changeLog) last() uint64 {
	if n := len(l.entries); n > 0 {
		return l.entries[n-1].index
	}
	return l.floor
}

func (l *changeLog) append(e changeEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == changeLogSize {
		l.floor = l.entries[0].index
		copy(l.entries, l.entries[1:])
		l.entries = l.entries[:len(l.entries)-1]
	}
	l.entries = append(l.entries, e)
	close(l.notify)
	l.notify = make(chan struct{})
}

// since returns what changed after minIndex, and the channel that closes
// on the next append.
func (l *changeLog) since(minIndex uint64) (Changes, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.last()
	// 0 knows nothing. An index ahead of the log's (an empty store's
	// index 0 counts as 1, as a blocking query's does) belongs to another
	// store or an older generation of this one.
	if minIndex == 0 || minIndex < l.floor || minIndex > max(last, 1) {
		return Changes{Index: last, Reset: true}, l.notify
	}
	c := Changes{Index: last}
	// Entries are in index order: find the first one past minIndex.
	i, _ := slices.BinarySearchFunc(l.entries, minIndex+1, func(e changeEntry, idx uint64) int {
		switch {
		case e.index < idx:
			return -1
		case e.index > idx:
			return 1
		}
		return 0
	})
	seenS, seenN, seenQ := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range l.entries[i:] {
		if e.acl {
			return Changes{Index: last, Reset: true}, l.notify
		}
		c.Services = appendNew(c.Services, seenS, e.services)
		c.Nodes = appendNew(c.Nodes, seenN, e.nodes)
		c.Queries = appendNew(c.Queries, seenQ, e.queries)
	}
	return c, l.notify
}

func appendNew(dst []string, seen map[string]bool, names []string) []string {
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			dst = append(dst, n)
		}
	}
	return dst
}

// ChangesSince returns which names changed after minIndex; 0 is Reset.
// ws, when given, is woken by the next write that changes anything, or
// by a restore.
func (s *Store) ChangesSince(ws WatchSet, minIndex uint64) Changes {
	st := s.state.Load()
	c, notify := st.changes.since(minIndex)
	if ws != nil {
		ws.Add(notify)
		ws.Add(st.abandon)
	}
	return c
}

// touched derives the names a write transaction's changes touch. It reads
// tx (still open) for the services on a node whose node row or node-level
// check changed, since those instances' answers change with it.
func touched(tx *memdb.Txn) (services, nodes, queries []string) {
	seenS, seenN, seenQ := map[string]bool{}, map[string]bool{}, map[string]bool{}
	addService := func(name string) {
		services = appendNew(services, seenS, []string{strings.ToLower(name)})
	}
	nodesOfServices := map[string]bool{} // nodes whose every service is touched
	for _, ch := range tx.Changes() {
		for _, obj := range []any{ch.Before, ch.After} {
			switch r := obj.(type) {
			case *serviceRow:
				addService(r.Name)
			case *checkRow:
				if r.ServiceName != "" {
					addService(r.ServiceName)
				} else {
					nodesOfServices[strings.ToLower(r.Node)] = true
				}
			case *Node:
				name := strings.ToLower(r.Node)
				nodes = appendNew(nodes, seenN, []string{name})
				nodesOfServices[name] = true
			case *queryRow:
				queries = appendNew(queries, seenQ, []string{r.ID})
				if r.Name != "" {
					queries = appendNew(queries, seenQ, []string{r.Name})
				}
			}
		}
	}
	for node := range nodesOfServices {
		it, err := nodeRows(tx, tableServices, node)
		if err != nil {
			continue // the schema has the index; an error cannot happen
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			addService(raw.(*serviceRow).Name)
		}
	}
	return services, nodes, queries
}

// commit commits tx and records what it changed at index idx in the
// change log, after the commit so that a reader woken by the entry reads
// the new data. Writes come from the Raft FSM one at a time, in index
// order, so entries are appended in index order.
func (st *storeState) commit(tx *memdb.Txn, idx uint64) {
	services, nodes, queries := touched(tx)
	tx.Commit()
	if len(services) > 0 || len(nodes) > 0 || len(queries) > 0 {
		st.changes.append(changeEntry{index: idx, services: services, nodes: nodes, queries: queries})
	}
}
