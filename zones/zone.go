package zones

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Zone is cairn's DNS zone: the naming scheme under one domain and the
// records answered in it. It is immutable and safe for concurrent use.
type Zone struct {
	domain     string // lowercase, fully qualified: "cluster."
	origin     string // domain without the trailing dot: "cluster"
	dc         string // the local datacenter, lowercase
	serviceTTL uint32 // Config.ServiceTTL: services ServiceTTLs does not cover, .addr. names
	nodeTTL    uint32
	ptrTTL     uint32
	ttls       serviceTTLs // Config.ServiceTTLs

	nodeMetaTXT        bool // TXT records of node metadata
	additionalNodeMeta bool // … also in the additional section of node A/AAAA

	// Records and sections built once by New and shared by every answer.
	soa        *dns.SOA
	soaSection []dns.RR // {soa}: the answer to SOA, the authority of negatives
	nsSection  []dns.RR // {NS ns.<domain>}
	anySection []dns.RR // {soa, NS}
	glue       []dns.RR // {A or AAAA of ns.<domain>}, nil without NSAddress
	nsAddr     netip.Addr
}

// New returns the zone cfg describes, or the error Validate reports.
// The SOA serial is the time of New in Unix seconds.
func New(cfg Config) (*Zone, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	domain := dns.Fqdn(strings.ToLower(cfg.Domain))
	z := &Zone{
		domain:     domain,
		origin:     strings.TrimSuffix(domain, "."),
		dc:         strings.ToLower(cfg.Datacenter),
		serviceTTL: seconds(cfg.ServiceTTL),
		nodeTTL:    seconds(cfg.NodeTTL),
		ptrTTL:     seconds(cfg.PTRTTL),
		ttls:       newServiceTTLs(cfg.ServiceTTLs),

		nodeMetaTXT:        cfg.NodeMetaTXT,
		additionalNodeMeta: cfg.NodeMetaTXT && cfg.AdditionalNodeMetaTXT,
	}
	nsName := nameserverHost + "." + domain
	z.soa = &dns.SOA{
		Hdr:     header(domain, dns.TypeSOA, cfg.SOA.MinTTL),
		Ns:      nsName,
		Mbox:    "hostmaster." + domain,
		Serial:  uint32(time.Now().Unix()),
		Refresh: cfg.SOA.Refresh,
		Retry:   cfg.SOA.Retry,
		Expire:  cfg.SOA.Expire,
		Minttl:  cfg.SOA.MinTTL,
	}
	ns := &dns.NS{Hdr: header(domain, dns.TypeNS, z.nodeTTL), Ns: nsName}
	z.soaSection = []dns.RR{z.soa}
	z.nsSection = []dns.RR{ns}
	z.anySection = []dns.RR{z.soa, ns}
	if cfg.NSAddress != "" {
		a, err := netip.ParseAddr(cfg.NSAddress)
		if err != nil { // Validate has checked it
			return nil, fmt.Errorf("zones: NSAddress: %w", err)
		}
		z.nsAddr = a.Unmap()
		z.glue = []dns.RR{addrRR(nsName, z.nsAddr, z.nodeTTL)}
	}
	return z, nil
}

// Domain returns the zone's domain, lowercase and fully qualified.
func (z *Zone) Domain() string { return z.domain }

// Datacenter returns the local datacenter, lowercase.
func (z *Zone) Datacenter() string { return z.dc }

// SOA returns the zone's SOA record. It is shared and must not be modified.
func (z *Zone) SOA() *dns.SOA { return z.soa }

// header returns the header of an IN record.
func header(owner string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}
