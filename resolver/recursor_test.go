package resolver

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
	"github.com/cairndns/cairn/zones"
)

// upstream is a fake recursor serving UDP and TCP on one port of
// 127.0.0.1 and recording the queries it receives.
type upstream struct {
	addr string
	log  *askLog

	mu      sync.Mutex
	queries []upstreamQuery
}

// upstreamQuery is one query an upstream received.
type upstreamQuery struct {
	net string // "udp" or "tcp"
	msg *dns.Msg
}

// askLog records, across upstreams, which was asked over which network,
// in order.
type askLog struct {
	mu    sync.Mutex
	asked []asked
}

// asked is one entry of an askLog.
type asked struct {
	u   *upstream
	net string
}

// Take returns the entries so far and forgets them.
func (l *askLog) Take() []asked {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.asked
	l.asked = nil
	return a
}

// startUpstream starts a fake recursor answering with answer, which gets
// the query and whether it came over TCP and returns the reply, or nil to
// send none. It records each query in log too, when log is not nil. It
// is shut down when the test ends.
func startUpstream(t *testing.T, log *askLog, answer func(r *dns.Msg, tcp bool) *dns.Msg) *upstream {
	t.Helper()
	pcs, ln, err := listen("127.0.0.1:0", 1)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	pc := pcs[0]
	u := &upstream{addr: pc.LocalAddr().String(), log: log}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		network := "udp"
		if isTCP(w) {
			network = "tcp"
		}
		u.mu.Lock()
		u.queries = append(u.queries, upstreamQuery{network, r.Copy()})
		u.mu.Unlock()
		if log != nil {
			log.mu.Lock()
			log.asked = append(log.asked, asked{u, network})
			log.mu.Unlock()
		}
		tcp := network == "tcp"
		if m := answer(r, tcp); m != nil {
			_ = w.WriteMsg(m)
		}
	})
	var wg sync.WaitGroup
	servers := []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}}
	t.Cleanup(func() {
		for _, srv := range servers {
			_ = srv.Shutdown()
		}
		wg.Wait()
	})
	for _, srv := range servers {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Go(func() { _ = srv.ActivateAndServe() })
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatalf("fake upstream did not start")
		}
	}
	return u
}

// Queries returns the queries received so far and forgets them.
func (u *upstream) Queries() []upstreamQuery {
	u.mu.Lock()
	defer u.mu.Unlock()
	q := u.queries
	u.queries = nil
	return q
}

// answering returns an upstream handler replying with rcode and, for
// NOERROR, the A records of addrs for the question's name; with tc set it
// replies over UDP with TC and no records instead.
func answering(rcode int, tc bool, addrs ...string) func(*dns.Msg, bool) *dns.Msg {
	return func(r *dns.Msg, tcp bool) *dns.Msg {
		m := new(dns.Msg)
		m.SetRcode(r, rcode)
		m.Authoritative = true // upstream's AA must not reach the client
		m.RecursionAvailable = true
		if opt := r.IsEdns0(); opt != nil {
			m.SetEdns0(4096, opt.Do())
		}
		if tc && !tcp {
			m.Truncated = true
			return m
		}
		name := r.Question[0].Name
		if rcode == dns.RcodeNameError {
			soa, _ := dns.NewRR("com. 900 IN SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400")
			m.Ns = append(m.Ns, soa)
		}
		for _, a := range addrs {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(a)})
		}
		if !tcp { // as a real server does: fit the buffer the query advertised
			size := dns.MinMsgSize
			if opt := r.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			m.Truncate(size)
		}
		return m
	}
}

// silent never replies.
func silent(*dns.Msg, bool) *dns.Msg { return nil }

// closedAddr returns a UDP address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// recursingServer returns a server forwarding to recursors, asking each
// for at most timeout.
func recursingServer(t *testing.T, strategy string, timeout time.Duration, recursors ...string) *Server {
	t.Helper()
	s := newTestServer(t, newFakeSource(), nil)
	s.cfg.Recursors = recursors
	s.cfg.RecursorStrategy = strategy
	s.cfg.RecursorTimeout = timeout
	if err := s.cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return s
}

func TestForward(t *testing.T) {
	log := new(askLog)
	ok1 := startUpstream(t, log, answering(dns.RcodeSuccess, false, "192.0.2.1"))
	ok2 := startUpstream(t, log, answering(dns.RcodeSuccess, false, "192.0.2.2"))
	nx := startUpstream(t, log, answering(dns.RcodeNameError, false))
	refusing := startUpstream(t, log, answering(dns.RcodeRefused, false))
	failing := startUpstream(t, log, answering(dns.RcodeServerFailure, false))
	mute := startUpstream(t, log, silent)
	tc := startUpstream(t, log, answering(dns.RcodeSuccess, true, "192.0.2.3", "192.0.2.4"))
	all := []*upstream{ok1, ok2, nx, refusing, failing, mute, tc}
	name := map[*upstream]string{ok1: "ok1", ok2: "ok2", nx: "nx", refusing: "refusing", failing: "failing", mute: "mute", tc: "tc"}
	show := func(as []asked) []string {
		var out []string
		for _, a := range as {
			out = append(out, name[a.u]+"/"+a.net)
		}
		return out
	}
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name      string
		recursors []*upstream
		rcode     int
		answer    []string // A record addresses
		ns        int
		asked     []asked // in order
	}{
		{"answer", []*upstream{ok1}, dns.RcodeSuccess, []string{"192.0.2.1"}, 0, []asked{{ok1, "udp"}}},
		{"sequential: first answers", []*upstream{ok1, ok2}, dns.RcodeSuccess, []string{"192.0.2.1"}, 0, []asked{{ok1, "udp"}}},
		{"NXDOMAIN stays NXDOMAIN", []*upstream{nx, ok1}, dns.RcodeNameError, nil, 1, []asked{{nx, "udp"}}},
		{"timeout: next", []*upstream{mute, ok2}, dns.RcodeSuccess, []string{"192.0.2.2"}, 0, []asked{{mute, "udp"}, {ok2, "udp"}}},
		{"REFUSED: next", []*upstream{refusing, ok2}, dns.RcodeSuccess, []string{"192.0.2.2"}, 0, []asked{{refusing, "udp"}, {ok2, "udp"}}},
		{"TC: TCP retry", []*upstream{tc}, dns.RcodeSuccess, []string{"192.0.2.3", "192.0.2.4"}, 0, []asked{{tc, "udp"}, {tc, "tcp"}}},
		{"all fail: SERVFAIL", []*upstream{mute, refusing, failing}, dns.RcodeServerFailure, nil, 0,
			[]asked{{mute, "udp"}, {refusing, "udp"}, {failing, "udp"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var addrs []string
			for _, u := range tt.recursors {
				addrs = append(addrs, u.addr)
			}
			s := recursingServer(t, RecursorSequential, timeout, addrs...)
			for _, u := range all {
				u.Queries()
			}
			log.Take()
			start := time.Now()
			req := query("Example.COM.", dns.TypeA)
			reply := exchange(t, s, req, "udp")
			elapsed := time.Since(start)
			if reply.Rcode != tt.rcode {
				t.Errorf("rcode: got %s, want %s", dns.RcodeToString[reply.Rcode], dns.RcodeToString[tt.rcode])
			}
			if reply.Authoritative || !reply.RecursionAvailable || !reply.RecursionDesired || reply.Id != req.Id {
				t.Errorf("header: got AA %v RA %v RD %v id %d, want !AA RA RD id %d",
					reply.Authoritative, reply.RecursionAvailable, reply.RecursionDesired, reply.Id, req.Id)
			}
			if len(reply.Question) != 1 || reply.Question[0] != req.Question[0] {
				t.Errorf("question: got %v, want %v", reply.Question, req.Question)
			}
			var got []string
			for _, rr := range reply.Answer {
				got = append(got, rr.(*dns.A).A.String())
			}
			if !slices.Equal(got, tt.answer) {
				t.Errorf("answer: got %v, want %v", got, tt.answer)
			}
			if len(reply.Ns) != tt.ns || reply.IsEdns0() != nil {
				t.Errorf("got %d authority records and OPT %v, want %d and no OPT", len(reply.Ns), reply.IsEdns0(), tt.ns)
			}
			for _, u := range all {
				for _, q := range u.Queries() {
					if !q.msg.RecursionDesired || q.msg.Question[0] != req.Question[0] {
						t.Errorf("upstream query: got RD %v question %v, want RD and %v", q.msg.RecursionDesired, q.msg.Question, req.Question)
					}
					if opt := q.msg.IsEdns0(); opt == nil || opt.UDPSize() != s.cfg.UDPSize || opt.Do() {
						t.Errorf("upstream query OPT: got %v, want size %d without DO", opt, s.cfg.UDPSize)
					}
				}
			}
			// A silent upstream costs the timeout, and no more.
			if got, want := show(log.Take()), show(tt.asked); !slices.Equal(got, want) {
				t.Errorf("upstreams asked: got %v, want %v", got, want)
			}
			if slices.Contains(tt.recursors, mute) && (elapsed < timeout || elapsed > timeout+2*time.Second) {
				t.Errorf("answer with a silent upstream took %s, want about the %s timeout", elapsed, timeout)
			}
		})
	}
}

// TestForwardOrder checks the order recursors are asked in: sequential
// always starts at the first; random starts anywhere, then goes on in
// the configured order.
func TestForwardOrder(t *testing.T) {
	const n = 3
	var order []int // index of the upstream, in the order asked
	var mu sync.Mutex
	var addrs []string
	for i := range n {
		u := startUpstream(t, nil, func(r *dns.Msg, tcp bool) *dns.Msg {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return answering(dns.RcodeRefused, false)(r, tcp) // every one fails: all are asked
		})
		addrs = append(addrs, u.addr)
	}
	for _, strategy := range []string{RecursorSequential, RecursorRandom} {
		t.Run(strategy, func(t *testing.T) {
			s := recursingServer(t, strategy, time.Second, addrs...)
			firsts := map[int]int{}
			for range 40 {
				mu.Lock()
				order = nil
				mu.Unlock()
				if reply := exchange(t, s, query("example.com.", dns.TypeA), "udp"); reply.Rcode != dns.RcodeServerFailure {
					t.Fatalf("rcode: got %s, want SERVFAIL", dns.RcodeToString[reply.Rcode])
				}
				mu.Lock()
				got := slices.Clone(order)
				mu.Unlock()
				if len(got) != n {
					t.Fatalf("asked: got %v, want each of %d upstreams once", got, n)
				}
				for i := range got {
					if got[i] != (got[0]+i)%n {
						t.Fatalf("asked: got %v, want the configured order from %d on", got, got[0])
					}
				}
				firsts[got[0]]++
			}
			switch {
			case strategy == RecursorSequential && firsts[0] != 40:
				t.Errorf("first asked: got %v, want upstream 0 each time", firsts)
			case strategy == RecursorRandom && len(firsts) < 2:
				t.Errorf("first asked in 40 queries: got %v, want more than one upstream", firsts)
			}
		})
	}
}

func TestForwardRefused(t *testing.T) {
	u := startUpstream(t, nil, answering(dns.RcodeSuccess, false, "192.0.2.1"))

	none := newTestServer(t, newFakeSource(), nil)
	reply := exchange(t, none, query("example.com.", dns.TypeA), "udp")
	if reply.Rcode != dns.RcodeRefused || reply.RecursionAvailable || reply.Authoritative || len(reply.Answer) != 0 {
		t.Errorf("without recursors: got rcode %s RA %v AA %v %d answers, want REFUSED !RA !AA none",
			dns.RcodeToString[reply.Rcode], reply.RecursionAvailable, reply.Authoritative, len(reply.Answer))
	}

	s := recursingServer(t, RecursorSequential, time.Second, u.addr)
	req := query("example.com.", dns.TypeA)
	req.RecursionDesired = false
	reply = exchange(t, s, req, "udp")
	if reply.Rcode != dns.RcodeRefused || reply.Authoritative || len(reply.Answer) != 0 {
		t.Errorf("RD clear: got rcode %s AA %v %d answers, want REFUSED !AA none",
			dns.RcodeToString[reply.Rcode], reply.Authoritative, len(reply.Answer))
	}
	if q := u.Queries(); len(q) != 0 {
		t.Errorf("upstream asked %d times for a query without RD, want 0", len(q))
	}
	// cairn's own names are answered as before, with RA now set.
	reply = exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
	if reply.Rcode != dns.RcodeSuccess || !reply.Authoritative || !reply.RecursionAvailable || len(reply.Answer) != 2 {
		t.Errorf("own name: got rcode %s AA %v RA %v %d answers, want NOERROR AA RA 2",
			dns.RcodeToString[reply.Rcode], reply.Authoritative, reply.RecursionAvailable, len(reply.Answer))
	}
	if q := u.Queries(); len(q) != 0 {
		t.Errorf("upstream asked %d times about cairn's own name, want 0", len(q))
	}
}

// TestForwardUnreachable checks that a recursor refusing the connection
// (ICMP port unreachable) is passed over at once, not after the timeout.
func TestForwardUnreachable(t *testing.T) {
	u := startUpstream(t, nil, answering(dns.RcodeSuccess, false, "192.0.2.1"))
	s := recursingServer(t, RecursorSequential, 5*time.Second, closedAddr(t), u.addr)
	start := time.Now()
	reply := exchange(t, s, query("example.com.", dns.TypeA), "udp")
	if reply.Rcode != dns.RcodeSuccess || len(reply.Answer) != 1 {
		t.Errorf("got rcode %s and %d answers, want NOERROR and 1", dns.RcodeToString[reply.Rcode], len(reply.Answer))
	}
	if d := time.Since(start); d >= 5*time.Second {
		t.Errorf("answer took %s, want less than the 5s timeout", d)
	}
}

func TestForwardEDNS(t *testing.T) {
	var big []string
	for i := range 100 {
		big = append(big, "192.0.2."+strconv.Itoa(i+1))
	}
	u := startUpstream(t, nil, answering(dns.RcodeSuccess, false, big...))
	s := recursingServer(t, RecursorSequential, time.Second, u.addr)

	req := query("example.com.", dns.TypeA)
	req.SetEdns0(4096, true)
	w := resolvertest.NewRecorder("udp")
	s.ServeDNS(w, req)
	reply, err := w.Reply()
	if err != nil {
		t.Fatalf("unpack reply: %v", err)
	}
	q := u.Queries()
	if len(q) != 1 {
		t.Fatalf("upstream queries: got %d, want 1", len(q))
	}
	if opt := q[0].msg.IsEdns0(); opt == nil || opt.UDPSize() != 4096 || !opt.Do() {
		t.Errorf("upstream query OPT: got %v, want the client's size 4096 and DO", opt)
	}
	opts := 0
	for _, rr := range reply.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			opts++
			if opt.UDPSize() != s.cfg.UDPSize || !opt.Do() {
				t.Errorf("reply OPT: got size %d DO %v, want %d and DO", opt.UDPSize(), opt.Do(), s.cfg.UDPSize)
			}
		}
	}
	if opts != 1 {
		t.Errorf("OPT records in the reply: got %d, want 1 (the server's own)", opts)
	}
	if len(w.Wire) > int(s.cfg.UDPSize) || !reply.Truncated || len(reply.Answer) == 0 || len(reply.Answer) == 100 {
		t.Errorf("100 forwarded answers over UDP: got %d bytes TC %v %d answers, want at most %d bytes, TC, some",
			len(w.Wire), reply.Truncated, len(reply.Answer), s.cfg.UDPSize)
	}
	// Over TCP all of them, in the upstream's order, and answer limits do
	// not cut a forwarded answer.
	s.cfg.ARecordLimit, s.cfg.UDPAnswerLimit = 1, 1
	for range 3 {
		reply = exchange(t, s, query("example.com.", dns.TypeA), "tcp")
		var got []string
		for _, rr := range reply.Answer {
			got = append(got, rr.(*dns.A).A.String())
		}
		if !slices.Equal(got, big) || reply.Truncated {
			t.Fatalf("over TCP: got %d answers TC %v, want all 100 in the upstream's order", len(got), reply.Truncated)
		}
	}
}

// TestForwardOverSockets runs a forwarded query through a started server.
func TestForwardOverSockets(t *testing.T) {
	u := startUpstream(t, nil, answering(dns.RcodeSuccess, false, "192.0.2.1"))
	s := recursingServer(t, RecursorRandom, time.Second, u.addr)
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Shutdown(context.Background())
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 5 * time.Second}
		reply, _, err := c.Exchange(query("example.com.", dns.TypeA), s.UDPAddr().String())
		if err != nil {
			t.Fatalf("%s exchange: %v", network, err)
		}
		if reply.Rcode != dns.RcodeSuccess || reply.Authoritative || !reply.RecursionAvailable || len(reply.Answer) != 1 {
			t.Errorf("%s: got rcode %s AA %v RA %v %d answers, want NOERROR !AA RA 1",
				network, dns.RcodeToString[reply.Rcode], reply.Authoritative, reply.RecursionAvailable, len(reply.Answer))
		}
	}
}

func TestRecursorAddr(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"10.0.0.2", "10.0.0.2:53"},
		{"10.0.0.2:5353", "10.0.0.2:5353"},
		{"2001:db8::1", "[2001:db8::1]:53"},
		{"[2001:db8::1]:5353", "[2001:db8::1]:5353"},
		{"dns.example.com", ""},
		{"10.0.0.2:0", ""},
		{"10.0.0.2:99999", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := RecursorAddr(tt.in)
		if (err != nil) != (tt.want == "") || got != tt.want {
			t.Errorf("RecursorAddr(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestConfigValidateRecursionAndLimits(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" when valid
	}{
		{"recursors", func(c *Config) { c.Recursors = []string{"10.0.0.2", "[::1]:5353"} }, ""},
		{"random", func(c *Config) { c.RecursorStrategy = RecursorRandom }, ""},
		{"limits", func(c *Config) { c.UDPAnswerLimit, c.ARecordLimit = 3, 1 }, ""},
		{"recursor not an IP", func(c *Config) { c.Recursors = []string{"10.0.0.2", "dns.example.com"} }, "Recursors[1]"},
		{"recursor port 0", func(c *Config) { c.Recursors = []string{"10.0.0.2:0"} }, "Recursors[0]"},
		{"strategy", func(c *Config) { c.RecursorStrategy = "round-robin" }, "RecursorStrategy"},
		{"empty strategy", func(c *Config) { c.RecursorStrategy = "" }, "RecursorStrategy"},
		{"recursor timeout", func(c *Config) { c.RecursorTimeout = 0 }, "RecursorTimeout"},
		{"idle timeout", func(c *Config) { c.TCPIdleTimeout = -time.Second }, "TCPIdleTimeout"},
		{"UDP answer limit", func(c *Config) { c.UDPAnswerLimit = -1 }, "UDPAnswerLimit"},
		{"A record limit", func(c *Config) { c.ARecordLimit = -1 }, "ARecordLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate: got %v, want nil", err)
			case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field+":")):
				t.Errorf("Validate: got %v, want an error naming %s", err, tt.field)
			}
		})
	}
	d := DefaultConfig()
	if d.RecursorStrategy != RecursorSequential || d.RecursorTimeout != 2*time.Second || d.TCPIdleTimeout != 10*time.Second ||
		len(d.Recursors) != 0 || d.UDPAnswerLimit != 0 || d.ARecordLimit != 0 || d.UDPSize != 1232 {
		t.Errorf("DefaultConfig: got %+v", d)
	}
}

func TestRcodeForRecursion(t *testing.T) {
	if got := rcodeFor(zones.Success, errRecursion); got != dns.RcodeServerFailure {
		t.Errorf("rcodeFor(errRecursion): got %s, want SERVFAIL", dns.RcodeToString[got])
	}
}
