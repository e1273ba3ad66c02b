package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Normalize completes c as the agent runs it, before validation.
func (c *Config) Normalize() {
	if c.Dev {
		// A dev agent is a server of a datacenter of one, like any
		// other; only its timers are short and its Raft is in memory.
		c.Server, c.BootstrapExpect = true, 1
	}
	// DNS names are compared lowercase; the datacenter and domain are kept
	// that way everywhere so a "DC1" in the config matches dc1 in a name.
	c.Datacenter, c.Domain = strings.ToLower(c.Datacenter), strings.ToLower(c.Domain)
	c.AltDomain = strings.ToLower(c.AltDomain)
	c.NodeID = strings.ToLower(c.NodeID)
}

// Advertise picks the address the agent is known by: advertise_addr,
// else bind_addr, else the first private IPv4 address of the host.
func (c Config) Advertise() (string, error) {
	if c.AdvertiseAddr != "" {
		return c.AdvertiseAddr, nil
	}
	bind, _ := netip.ParseAddr(c.BindAddr)
	if !bind.IsUnspecified() {
		return bind.String(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("find an address to advertise: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && p.Addr().IsPrivate() {
			return p.Addr().String(), nil
		}
	}
	return "", &FieldError{Field: "advertise_addr", Reason: "bind_addr is unspecified and no private IPv4 address was found; set -advertise"}
}
