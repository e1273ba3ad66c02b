package resolver

import (
	"sync"
	"sync/atomic"

	"github.com/cairndns/cairn/zones"
)

// memoLimit bounds the answers kept per instance set. A set is asked for
// under a handful of names (with and without the datacenter, A and SRV,
// the RFC 2782 form); past the limit answers are built each time rather
// than letting odd names grow the memo.
const memoLimit = 16

// answerMemo keeps the answers built from one Instances set. Readers take
// no lock: the list is replaced whole (copy on write) under mu, which only
// writers take, so a question answered from the memo shares no lock with
// anyone while its reply is packed.
type answerMemo struct {
	mu   sync.Mutex
	list atomic.Pointer[[]memoEntry]
}

type memoEntry struct {
	zone  *zones.Zone
	qtype uint16
	qname string
	ans   zones.Answer
	wire  *wireCache // the replies packed from ans (wirecache.go)
}

// get returns the answer kept for (z, qtype, qname), if any.
func (m *answerMemo) get(z *zones.Zone, qtype uint16, qname string) (zones.Answer, bool) {
	if e := m.entry(z, qtype, qname); e != nil {
		return e.ans, true
	}
	return zones.Answer{}, false
}

// entry returns the entry kept for (z, qtype, qname), or nil. Entries
// are never modified once listed, and a list copied keeps their wire
// caches (pointers), so the entry may be kept.
func (m *answerMemo) entry(z *zones.Zone, qtype uint16, qname string) *memoEntry {
	if l := m.list.Load(); l != nil {
		for i := range *l {
			e := &(*l)[i]
			if e.zone == z && e.qtype == qtype && e.qname == qname {
				return e
			}
		}
	}
	return nil
}

// put keeps ans for (z, qtype, qname), unless the memo is full, and
// reports whether it did. The records in ans are shared from then on and
// must not be modified (the handler copies a slice before reordering or
// appending to it).
func (m *answerMemo) put(z *zones.Zone, qtype uint16, qname string, ans zones.Answer) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []memoEntry
	if l := m.list.Load(); l != nil {
		old = *l
	}
	if len(old) >= memoLimit {
		return false
	}
	for _, e := range old {
		if e.zone == z && e.qtype == qtype && e.qname == qname {
			return false // built twice by racing questions; the first is kept
		}
	}
	l := append(make([]memoEntry, 0, len(old)+1), old...)
	l = append(l, memoEntry{zone: z, qtype: qtype, qname: qname, ans: ans, wire: new(wireCache)})
	m.list.Store(&l)
	return true
}
