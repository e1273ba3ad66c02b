package resolver

import (
	"net"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// A socket bound to an unspecified address (0.0.0.0, ::) receives on
// every address of the host, and the kernel would send a reply from
// whichever address routes to the client, which the client then drops as
// not from the server it asked. So such a socket asks for each datagram's
// destination address (IP_PKTINFO and its IPv6 and BSD kin), and each
// reply names it as its source, as miekg/dns's server does.

// oobSize is the room for the control messages of a datagram read from a
// wild socket: an IPv6 and an IPv4 packet-info message (a dual-stack
// socket may carry either).
func oobSize() int {
	return len(ipv6.NewControlMessage(ipv6.FlagDst)) + len(ipv4.NewControlMessage(ipv4.FlagDst))
}

// watchDestination makes c report the destination address of each
// datagram, and reports whether it could: for an IPv6 socket, which may
// also carry IPv4 (mapped), both kinds are asked for, as either may come.
func watchDestination(c *net.UDPConn) bool {
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		return ipv4.NewPacketConn(c).SetControlMessage(ipv4.FlagDst, true) == nil
	}
	err6 := ipv6.NewPacketConn(c).SetControlMessage(ipv6.FlagDst, true)
	err4 := ipv4.NewPacketConn(c).SetControlMessage(ipv4.FlagDst, true)
	return err6 == nil || err4 == nil
}

// replySource returns the control message that sends a reply from the
// address the query in oob was sent to, or nil when oob does not say.
func replySource(oob []byte) []byte {
	var cm6 ipv6.ControlMessage
	if cm6.Parse(oob) == nil && cm6.Dst != nil && cm6.Dst.To4() == nil {
		return (&ipv6.ControlMessage{Src: cm6.Dst}).Marshal()
	}
	dst := cm6.Dst
	if dst == nil {
		var cm4 ipv4.ControlMessage
		if cm4.Parse(oob) != nil || cm4.Dst == nil {
			return nil
		}
		dst = cm4.Dst
	}
	// ipv6's Marshal leaves out an IPv4 source; a mapped one is sent
	// with an IPv4 message, which Linux takes on an IPv6 socket too.
	return (&ipv4.ControlMessage{Src: dst}).Marshal()
}
