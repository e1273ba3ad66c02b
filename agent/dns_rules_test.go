package agent_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
)

// raw sends m to the agent over network and returns the reply.
func raw(t *testing.T, addr, network string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s exchange: %v", network, err)
	}
	return r
}

// TestDNSRules checks the rules every answer follows against a real agent:
// IPv6, shuffling, record limits, EDNS0, per-service TTLs and protocol
// hygiene.
func TestDNSRules(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Zones.ServiceTTLs = map[string]time.Duration{"*": 5 * time.Second, "many": 30 * time.Second}
	cfg.Resolver.ARecordLimit = 3
	a := agenttest.Start(t, cfg)
	addr := a.DNSAddr().String()
	c := client(t, a)
	ctx := context.Background()
	regs := []*api.AgentServiceRegistration{{ID: "v6", Name: "six", Port: 80, Address: "2001:db8::6"}}
	for i := range 8 {
		regs = append(regs, &api.AgentServiceRegistration{ID: fmt.Sprintf("many-%d", i), Name: "many", Port: 80 + i,
			Address: fmt.Sprintf("10.2.0.%d", i+1)})
	}
	for _, reg := range regs {
		if err := c.Agent().ServiceRegister(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}

	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := query(t, a, network, "six.service.cluster", dns.TypeAAAA)
			if len(r.Answer) != 1 || r.Answer[0].(*dns.AAAA).AAAA.String() != "2001:db8::6" {
				t.Errorf("AAAA of an IPv6 service: got %v", r.Answer)
			}
			if r := query(t, a, network, "six.service.cluster", dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
				t.Errorf("A of an IPv6-only service: got %s %v, want NODATA", dns.RcodeToString[r.Rcode], r.Answer)
			}

			// a_record_limit 3 cuts the 8 addresses, without TC; the SRV
			// records are not A records and all come back.
			r = query(t, a, network, "many.service.cluster", dns.TypeA)
			if len(r.Answer) != 3 || r.Truncated {
				t.Errorf("A with a_record_limit 3: got %d records TC=%v, want 3 without TC", len(r.Answer), r.Truncated)
			}
			for _, rr := range r.Answer {
				if rr.Header().Ttl != 30 {
					t.Errorf("TTL of many: got %d, want 30 (service_ttl[many])", rr.Header().Ttl)
				}
			}
			if r := query(t, a, network, "six.service.cluster", dns.TypeAAAA); r.Answer[0].Header().Ttl != 5 {
				t.Errorf("TTL of six: got %d, want 5 (service_ttl[*])", r.Answer[0].Header().Ttl)
			}

			// Shuffled on every response: the SRV order changes.
			orders := map[string]bool{}
			for range 20 {
				r := query(t, a, network, "many.service.cluster", dns.TypeSRV)
				var ports []string
				for _, rr := range r.Answer {
					ports = append(ports, strconv.Itoa(int(rr.(*dns.SRV).Port)))
				}
				orders[strings.Join(ports, ",")] = true
			}
			if len(orders) < 2 {
				t.Errorf("20 SRV answers came in %d order(s), want them shuffled", len(orders))
			}

			// EDNS0: our own buffer size, not the client's.
			m := new(dns.Msg)
			m.SetQuestion("six.service.cluster.", dns.TypeAAAA)
			m.SetEdns0(4096, true)
			r = raw(t, addr, network, m)
			if opt := r.IsEdns0(); opt == nil || opt.UDPSize() != 1232 || !opt.Do() {
				t.Errorf("OPT: got %v, want size 1232 with DO echoed", opt)
			}
			m.IsEdns0().SetVersion(1)
			if r := raw(t, addr, network, m); r.Rcode != dns.RcodeBadVers {
				t.Errorf("EDNS version 1: got %s, want BADVERS", dns.RcodeToString[r.Rcode])
			}

			// Protocol hygiene.
			m = new(dns.Msg)
			m.SetQuestion("six.service.cluster.", dns.TypeA)
			m.Question = append(m.Question, m.Question[0])
			if r := raw(t, addr, network, m); r.Rcode != dns.RcodeFormatError {
				t.Errorf("two questions: got %s, want FORMERR", dns.RcodeToString[r.Rcode])
			}
			m = new(dns.Msg)
			m.SetQuestion("six.service.cluster.", dns.TypeA)
			m.Opcode = dns.OpcodeStatus
			if r := raw(t, addr, network, m); r.Rcode != dns.RcodeNotImplemented {
				t.Errorf("opcode STATUS: got %s, want NOTIMP", dns.RcodeToString[r.Rcode])
			}
			m = new(dns.Msg)
			m.SetQuestion("six.service.cluster.", dns.TypeA)
			m.Question[0].Qclass = dns.ClassCHAOS
			if r := raw(t, addr, network, m); r.Rcode != dns.RcodeRefused {
				t.Errorf("class CH: got %s, want REFUSED", dns.RcodeToString[r.Rcode])
			}
		})
	}
}
