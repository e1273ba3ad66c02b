package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
)

// Validate checks every field a user can set and returns all problems at
// once, joined, each a *FieldError naming the file key. The components
// check the rest of their nested configurations when the agent builds
// them.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if r := labelProblem(c.NodeName); r != "" {
		bad("node_name", "%q %s", c.NodeName, r)
	}
	if c.NodeID != "" && !catalog.IsQueryID(c.NodeID) {
		bad("node_id", "%q is not a UUID such as \"adf4238a-882b-9ddc-4a9d-5b6758e4159e\"", c.NodeID)
	}
	if r := labelProblem(c.Datacenter); r != "" {
		bad("datacenter", "%q %s", c.Datacenter, r)
	} else if reservedLabels[strings.ToLower(c.Datacenter)] {
		bad("datacenter", "%q is a keyword of DNS names (service, node, addr, query, near) and cannot name a datacenter", c.Datacenter)
	}
	c.validateACL(bad)
	c.validateLimits(bad)
	if d := c.Telemetry.PrometheusRetentionTime; d < time.Second {
		bad("telemetry.prometheus_retention_time", "must be at least 1s, got %s", d)
	}
	c.validateServer(bad)
	c.validateCoordinates(bad) // coordinates.go
	c.validateGossip(bad)      // gossip.go
	c.validateAddresses(bad)   // addresses.go
	c.validateDNSSEC(bad)      // dnssec.go
	c.validateServices(bad)    // services.go
	if c.Resolver.MaxTCPConns < 0 {
		bad("limits.dns_max_tcp_conns", "must be 0 (no cap) or more, got %d", c.Resolver.MaxTCPConns)
	}
	if c.Resolver.MaxTCPConnsPerClient < 0 {
		bad("limits.dns_max_tcp_conns_per_client", "must be 0 (no cap) or more, got %d", c.Resolver.MaxTCPConnsPerClient)
	}
	if err := checkDomain(c.Domain); err != "" {
		bad("domain", "%q %s", c.Domain, err)
	}
	for _, a := range []struct{ field, value string }{
		{"bind_addr", c.BindAddr}, {"client_addr", c.ClientAddr},
	} {
		if _, err := netip.ParseAddr(a.value); err != nil {
			bad(a.field, "%q is not an IP address", a.value)
		}
	}
	for _, a := range []struct{ field, value string }{
		{"advertise_addr", c.AdvertiseAddr}, {"advertise_addr_wan", c.AdvertiseAddrWAN},
	} {
		if a.value == "" {
			continue
		}
		if ip, err := netip.ParseAddr(a.value); err != nil || ip.IsUnspecified() {
			bad(a.field, "%q is not a usable IP address", a.value)
		}
	}
	for _, p := range []struct {
		field string
		value int
	}{{"ports.dns", c.Ports.DNS}, {"ports.server", c.Ports.Server}, {"ports.serf_lan", c.Ports.SerfLAN}, {"ports.serf_wan", c.Ports.SerfWAN}} {
		if p.value < 0 || p.value > 65535 {
			bad(p.field, "must be between 0 and 65535, got %d", p.value)
		}
	}
	if c.Ports.HTTP < -1 || c.Ports.HTTP > 65535 {
		bad("ports.http", "must be -1 (off) or between 0 and 65535, got %d", c.Ports.HTTP)
	}
	if c.Ports.HTTPS < -1 || c.Ports.HTTPS > 65535 {
		bad("ports.https", "must be -1 (off) or between 0 and 65535, got %d", c.Ports.HTTPS)
	}
	if c.Ports.DNSTLS < -1 || c.Ports.DNSTLS > 65535 {
		bad("ports.dns_tls", "must be -1 (off) or between 0 and 65535, got %d", c.Ports.DNSTLS)
	}
	c.validateTLS(bad)
	if c.DataDir == "" && !c.Dev {
		bad("data_dir", "is required unless -dev is set")
	}
	c.validateLogging(bad) // logging.go
	if err := catalog.ValidateMeta("node_meta", c.NodeMeta); err != nil {
		var fe *catalog.FieldError
		if errors.As(err, &fe) {
			bad(fe.Field, "%s", fe.Reason)
		}
	}
	if c.AltDomain != "" {
		if r := checkDomain(c.AltDomain); r != "" {
			bad("alt_domain", "%q %s", c.AltDomain, r)
		} else if strings.EqualFold(strings.TrimSuffix(c.AltDomain, "."), strings.TrimSuffix(c.Domain, ".")) {
			bad("alt_domain", "%q is the same as domain", c.AltDomain)
		}
	}
	for i, r := range c.Resolver.Recursors {
		if _, err := resolver.RecursorAddr(r); err != nil {
			bad(fmt.Sprintf("recursors[%d]", i), "%v", err)
		}
	}
	errs = append(errs, c.validateDNS()...)
	errs = append(errs, c.validateCluster()...)
	return errors.Join(errs...)
}

func (c *Config) validateCluster() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch {
	case c.BootstrapExpect < 0:
		bad("bootstrap_expect", "must not be negative, got %d", c.BootstrapExpect)
	case c.BootstrapExpect > 1 && !c.Server:
		bad("bootstrap_expect", "requires server mode (-server)")
	case c.BootstrapExpect > 1 && c.Dev:
		bad("bootstrap_expect", "cannot be combined with -dev, which is a cluster of one")
	}
	if len(c.Join) > 0 && c.Dev {
		bad("retry_join", "cannot be combined with -dev, which is a cluster of one")
	}
	for i, j := range c.Join {
		if strings.TrimSpace(j) == "" {
			bad(fmt.Sprintf("retry_join[%d]", i), "must not be empty")
		}
	}
	switch {
	case len(c.JoinWAN) > 0 && c.Dev:
		bad("retry_join_wan", "cannot be combined with -dev, which is a cluster of one")
	case len(c.JoinWAN) > 0 && !c.Server:
		bad("retry_join_wan", "requires server mode (-server): only servers are in the WAN pool")
	}
	for i, j := range c.JoinWAN {
		if strings.TrimSpace(j) == "" {
			bad(fmt.Sprintf("retry_join_wan[%d]", i), "must not be empty")
		}
	}
	if c.RetryInterval <= 0 {
		bad("retry_interval", "must be positive, got %s", c.RetryInterval)
	}
	if c.RetryMax < 0 {
		bad("retry_max", "must not be negative, got %d", c.RetryMax)
	}
	if c.AEInterval < time.Second {
		bad("ae_interval", "must be at least 1s, got %s", c.AEInterval)
	}
	if c.CheckUpdateInterval < 0 {
		bad("check_update_interval", "must not be negative, got %s", c.CheckUpdateInterval)
	}
	if c.ReconnectTimeout < time.Minute {
		bad("reconnect_timeout", "must be at least 1m, got %s", c.ReconnectTimeout)
	}
	if _, err := c.GossipKey(); err != nil {
		bad("encrypt", "%v", err)
	}
	return errs
}

// validateDNS checks the keys of the dns_config block, set on the nested
// Zones, Resolver and Cache configurations.
func (c *Config) validateDNS() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "dns_config." + field, Reason: fmt.Sprintf(format, args...)})
	}
	z, r, ca := &c.Zones, &c.Resolver, &c.Cache
	if z.NodeTTL < 0 {
		bad("node_ttl", "must not be negative, got %s", z.NodeTTL)
	}
	if z.PTRTTL < 0 {
		bad("ptr_ttl", "must not be negative, got %s", z.PTRTTL)
	}
	for k, v := range z.ServiceTTLs {
		name := strings.TrimSuffix(k, "*")
		if name != "" && labelProblem(name) != "" || strings.Contains(name, "*") {
			bad("service_ttl["+k+"]", "key must be a service name, a prefix ending in '*', or '*'")
		}
		if v < 0 {
			bad("service_ttl["+k+"]", "must not be negative, got %s", v)
		}
	}
	if z.SOA.Refresh == 0 {
		bad("soa.refresh", "must be positive")
	}
	if z.SOA.Retry == 0 {
		bad("soa.retry", "must be positive")
	}
	if z.SOA.Expire < z.SOA.Refresh {
		bad("soa.expire", "must be at least soa.refresh (%d), got %d", z.SOA.Refresh, z.SOA.Expire)
	}
	if ca.MaxStale <= 0 {
		bad("max_stale", "must be positive, got %s", ca.MaxStale)
	} else if ca.MaxStale < ca.StaleAfter {
		bad("max_stale", "must be at least %s, got %s", ca.StaleAfter, ca.MaxStale)
	}
	if ca.MaxEntries <= 0 {
		bad("cache_max_entries", "must be positive, got %d", ca.MaxEntries)
	}
	if ca.IdleTimeout <= 0 {
		bad("cache_idle_timeout", "must be positive, got %s", ca.IdleTimeout)
	}
	if r.UDPAnswerLimit < 0 {
		bad("udp_answer_limit", "must not be negative, got %d", r.UDPAnswerLimit)
	}
	if r.ARecordLimit < 0 {
		bad("a_record_limit", "must not be negative, got %d", r.ARecordLimit)
	}
	if r.UDPSockets < 0 {
		bad("udp_sockets", "must be 0 (one per core) or more, got %d", r.UDPSockets)
	}
	if r.UDPSize < 512 {
		bad("max_udp_size", "must be between 512 and 65535, got %d", r.UDPSize)
	}
	if r.RecursorTimeout <= 0 {
		bad("recursor_timeout", "must be positive, got %s", r.RecursorTimeout)
	}
	if rl := r.RRL; rl.Enabled {
		if rl.ResponsesPerSecond < 1 {
			bad("rrl.responses_per_second", "must be at least 1, got %d", rl.ResponsesPerSecond)
		}
		if rl.AllPerSecond < 0 {
			bad("rrl.all_per_second", "must be 0 (no limit) or more, got %d", rl.AllPerSecond)
		}
		if rl.MinAmplification < 0 || rl.MinAmplification > 100 {
			bad("rrl.min_amplification", "must be between 0 (count every reply) and 100, got %d", rl.MinAmplification)
		}
		if rl.Slip < 0 || rl.Slip > 10 {
			bad("rrl.slip", "must be between 0 (drop all) and 10, got %d", rl.Slip)
		}
		if rl.IPv4PrefixLength < 0 || rl.IPv4PrefixLength > 32 {
			bad("rrl.ipv4_prefix_length", "must be between 0 and 32, got %d", rl.IPv4PrefixLength)
		}
		if rl.IPv6PrefixLength < 0 || rl.IPv6PrefixLength > 128 {
			bad("rrl.ipv6_prefix_length", "must be between 0 and 128, got %d", rl.IPv6PrefixLength)
		}
	}
	switch r.RecursorStrategy {
	case resolver.RecursorSequential, resolver.RecursorRandom:
	default:
		bad("recursor_strategy", "must be sequential or random, got %q", r.RecursorStrategy)
	}
	switch r.UnhealthyAnswer {
	case resolver.UnhealthyNoData, resolver.UnhealthyNXDomain, resolver.UnhealthyAll:
	default:
		bad("unhealthy_answer", "must be nodata, nxdomain or all, got %q", r.UnhealthyAnswer)
	}
	return errs
}

// reservedLabels are the keywords of cairn's DNS names; a datacenter named
// like one would make names such as web.service.node.cluster ambiguous.
// "near" stands for the local datacenter sorted by distance
// (web.service.near.cluster), so it cannot name one either.
var reservedLabels = map[string]bool{"service": true, "node": true, "addr": true, "query": true, "near": true}

// labelProblem says why s cannot be one DNS label, or "".
func labelProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > 63 {
		return "must be at most 63 characters"
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			ch == '-' && i > 0 && i < len(s)-1
		if !ok {
			return "must be a DNS label: letters, digits and inner '-' only"
		}
	}
	return ""
}

func checkDomain(d string) string {
	d = strings.TrimSuffix(d, ".")
	if d == "" {
		return "must not be empty"
	}
	for _, label := range strings.Split(d, ".") {
		if r := labelProblem(label); r != "" {
			return "has a label that " + r
		}
	}
	return ""
}
