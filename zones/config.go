package zones

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

// Config configures a Zone.
type Config struct {
	// Domain is the zone cairn is authoritative for. New stores it
	// lowercase and fully qualified, so "Cluster" and "cluster." are the
	// same. Default "cluster.".
	Domain string
	// Datacenter is the local datacenter, used when a name omits its
	// datacenter label. It is a DNS label and may not be one of the
	// keywords of the naming scheme ("service", "node", "addr").
	// Default "dc1".
	Datacenter string
	// ServiceTTL is the TTL of the records answering service names and of
	// the .addr. names SRV targets point at, for services ServiceTTLs does
	// not cover. Whole seconds; default 0, so that clients always see
	// current health, as Consul does.
	ServiceTTL time.Duration
	// ServiceTTLs overrides ServiceTTL per service. A key is a service
	// name ("web") or a prefix followed by '*' ("db*"; "*" alone matches
	// every service); keys are letters, digits and '-', case-insensitive.
	// The most specific key wins: the exact name, then the longest
	// matching prefix, then "*", then ServiceTTL. The TTL applies to the
	// service's A, AAAA and SRV records and to the .addr. records in the
	// additional section of its SRV answers. Whole seconds; default none.
	ServiceTTLs map[string]time.Duration
	// NodeTTL is the TTL of node records and of the apex NS record and its
	// glue. Whole seconds; default 0.
	NodeTTL time.Duration
	// PTRTTL is the TTL of the PTR records answering reverse lookups
	// (in-addr.arpa, ip6.arpa). Whole seconds; default 0.
	PTRTTL time.Duration
	// NodeMetaTXT answers TXT questions about <node>.node names with the
	// node's metadata, one TXT record "key=value" per pair, sorted by key.
	// When false, node names have no TXT records. Default true.
	NodeMetaTXT bool
	// AdditionalNodeMetaTXT also puts those TXT records in the additional
	// section of A and AAAA answers about node names (Consul's
	// enable_additional_node_meta_txt). It has no effect unless
	// NodeMetaTXT is set. Default true.
	AdditionalNodeMetaTXT bool
	// NSAddress is the IPv4 or IPv6 address given as glue for ns.<domain>,
	// the name server the apex NS record names. Default "": the NS record
	// is answered without glue and ns.<domain> has no address records.
	NSAddress string
	// SOA holds the timers of the zone's SOA record.
	SOA SOAConfig
}

// SOAConfig holds the timers of the zone's SOA record, in seconds.
type SOAConfig struct {
	Refresh uint32 // default 3600
	Retry   uint32 // default 600
	Expire  uint32 // default 86400
	// MinTTL is the negative-caching TTL (RFC 2308): the TTL of the SOA
	// record itself, sent in the authority section of NXDOMAIN and NODATA
	// answers. Default 5: long enough for downstream resolvers to absorb
	// a burst of questions for a missing name, short enough that a
	// service that appears is answered within seconds.
	MinTTL uint32
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Domain:                "cluster.", // Consul's "consul." renamed
		Datacenter:            "dc1",
		ServiceTTL:            0,   // no caching of health-dependent answers
		ServiceTTLs:           nil, // no per-service TTLs
		NodeTTL:               0,
		NodeMetaTXT:           true, // node metadata as TXT, as Consul
		AdditionalNodeMetaTXT: true, // and in the additional section of A/AAAA
		NSAddress:             "",   // no glue
		SOA: SOAConfig{
			Refresh: 3600,
			Retry:   600,
			Expire:  86400,
			MinTTL:  5, // negative answers cached for 5s downstream
		},
	}
}

// Validate reports every invalid field of c, each error naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("zones: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if r := validDomain(c.Domain); r != "" {
		bad("Domain", "%q %s", c.Domain, r)
	}
	if r := catalog.ValidLabel(c.Datacenter); r != "" {
		bad("Datacenter", "%q %s", c.Datacenter, r)
	} else if keywordKind(strings.ToLower(c.Datacenter)) != KindInvalid {
		bad("Datacenter", "%q is a keyword of the naming scheme", c.Datacenter)
	}
	for _, d := range []struct {
		field string
		ttl   time.Duration
	}{{"ServiceTTL", c.ServiceTTL}, {"NodeTTL", c.NodeTTL}, {"PTRTTL", c.PTRTTL}} {
		if r := validTTL(d.ttl); r != "" {
			bad(d.field, "%s", r)
		}
	}
	lower := make(map[string]string, len(c.ServiceTTLs)) // lowercase key → key
	for _, key := range slices.Sorted(maps.Keys(c.ServiceTTLs)) {
		if r := validTTLKey(key); r != "" {
			bad("ServiceTTLs", "key %q %s", key, r)
		}
		if r := validTTL(c.ServiceTTLs[key]); r != "" {
			bad("ServiceTTLs["+key+"]", "%s", r)
		}
		if other, ok := lower[strings.ToLower(key)]; ok {
			bad("ServiceTTLs", "keys %q and %q differ only in case", other, key)
		}
		lower[strings.ToLower(key)] = key
	}
	if c.NSAddress != "" {
		if _, err := netip.ParseAddr(c.NSAddress); err != nil {
			bad("NSAddress", "%q is not an IP address", c.NSAddress)
		}
	}
	if c.SOA.Refresh == 0 {
		bad("SOA.Refresh", "must be positive")
	}
	if c.SOA.Retry == 0 {
		bad("SOA.Retry", "must be positive")
	}
	if c.SOA.Expire < c.SOA.Refresh {
		bad("SOA.Expire", "must be at least SOA.Refresh (%d), got %d", c.SOA.Refresh, c.SOA.Expire)
	}
	return errors.Join(errs...)
}

// validTTL reports why d cannot be a TTL, or "" when it can.
func validTTL(d time.Duration) string {
	if d < 0 || d/time.Second > math.MaxUint32 {
		return fmt.Sprintf("must be between 0 and %ds, got %s", uint32(math.MaxUint32), d)
	}
	return ""
}

// validTTLKey reports why key cannot be a key of Config.ServiceTTLs, or ""
// when it can: letters, digits and '-' (at most a label's length),
// optionally followed by one '*'; "*" alone is the wildcard.
func validTTLKey(key string) string {
	name := strings.TrimSuffix(key, "*")
	if key == "" {
		return "must not be empty"
	}
	if len(name) > catalog.MaxLabelLength {
		return fmt.Sprintf("must be at most %d characters before '*'", catalog.MaxLabelLength)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isLDH(c) && !(c >= 'A' && c <= 'Z') {
			return fmt.Sprintf("has character %q (letters, digits and '-', then an optional trailing '*')", c)
		}
	}
	return ""
}

// validDomain reports why d cannot be the zone's domain, or "" when it can:
// a name of one or more labels of letters, digits, '-' and '_', with or
// without the trailing dot, short enough to leave room for the longest
// names built under it.
func validDomain(d string) string {
	d = strings.TrimSuffix(d, ".")
	if d == "" {
		return "must not be empty or the root"
	}
	// The longest name built under the domain is an SRV target:
	// <32 hex>.addr.<dc>.<domain>. — 32+1+4+1+63+1 characters before it.
	if len(d) > 255-103-1 {
		return fmt.Sprintf("must be at most %d characters", 255-103-1)
	}
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > catalog.MaxLabelLength {
			return "must be labels of 1–63 characters separated by dots"
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLDH(c) && c != '_' && !(c >= 'A' && c <= 'Z') {
				return fmt.Sprintf("has character %q (letters, digits, '-' and '_' only)", c)
			}
		}
	}
	if _, ok := dns.IsDomainName(d); !ok {
		return "is not a domain name"
	}
	return ""
}

// seconds converts a validated TTL to whole seconds.
func seconds(d time.Duration) uint32 { return uint32(d / time.Second) }
