package local

import "net/netip"

// TaggedAddresses are the node's addresses by network, as Consul's
// agents register them: "lan" is the advertised address, "wan" the WAN one
// (the same when none is set), each also under "lan_ipv4"/"lan_ipv6" and
// "wan_ipv4"/"wan_ipv6" by its family.
func TaggedAddresses(lan, wan string) map[string]string {
	if wan == "" {
		wan = lan
	}
	out := map[string]string{"lan": lan, "wan": wan}
	for name, addr := range map[string]string{"lan": lan, "wan": wan} {
		if ip, err := netip.ParseAddr(addr); err == nil {
			if ip.Unmap().Is4() {
				out[name+"_ipv4"] = addr
			} else {
				out[name+"_ipv6"] = addr
			}
		}
	}
	return out
}
