package zones

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
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
	// the .addr. names SRV targets point at. Whole seconds; default 0, so
	// that clients always see current health, as Consul does.
	ServiceTTL time.Duration
	// NodeTTL is the TTL of node records and of the apex NS record and its
	// glue. Whole seconds; default 0.
	NodeTTL time.Duration
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
	// answers. Default 0, so a name that appears is answered at once.
	MinTTL uint32
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Domain:     "cluster.", // Consul's "consul." renamed
		Datacenter: "dc1",
		ServiceTTL: 0, // no caching of health-dependent answers
		NodeTTL:    0,
		NSAddress:  "", // no glue
		SOA: SOAConfig{
			Refresh: 3600,
			Retry:   600,
			Expire:  86400,
			MinTTL:  0,
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
	}{{"ServiceTTL", c.ServiceTTL}, {"NodeTTL", c.NodeTTL}} {
		if d.ttl < 0 || d.ttl/time.Second > math.MaxUint32 {
			bad(d.field, "must be between 0 and %ds, got %s", uint32(math.MaxUint32), d.ttl)
		}
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
