package gossip

import (
	"fmt"

	"github.com/hashicorp/memberlist"
)

// The metadata each member gossips (memberlist's NodeMeta, at most
// memberlist.MetaMaxSize bytes) is a version byte followed by fields, each
// one key byte, one length byte and that many value bytes:
//
//	0x01 'r' len "server"  'd' len "dc1"  'a' len "10.0.0.1:8300"  'p' 1 0x01
//
// Within one version, decoders skip keys they do not know, so a field can be
// added without a version bump; a new version byte marks a change older
// decoders cannot read.
const (
	metaVersion = 1

	keyRole     = 'r'
	keyDC       = 'd'
	keyRPCAddr  = 'a'
	keyProtocol = 'p'
	keyWANPort  = 'w' // a server's WAN gossip port, in its LAN metadata (flood join)
	keyKeys     = 'k' // the fingerprints of the member's gossip keys, primary first (keyring.go)
	keyNodeID   = 'i' // the agent's node ID, a UUID
	keyBuild    = 'b' // the agent's "<version>:<revision>"
	keyVersions = 'v' // two bytes: the lowest and highest protocol versions the member speaks
	keyFeatures = 'f' // one byte: the Features the member has
)

// meta is what one member tells the others about itself.
type meta struct {
	Role            Role
	Datacenter      string
	RPCAddr         string // host:port; empty for clients
	ProtocolVersion uint8
	WANPort         uint16 // 0: none (a client, or a LAN member of an older version)
	// Keys are the fingerprints of the member's gossip keys, primary
	// first; "" for a member gossiping in clear text.
	Keys fingerprints
	// NodeID and Build are the agent's node ID and "<version>:<revision>";
	// "" when unknown.
	NodeID, Build string
	// ProtocolMin and ProtocolMax are the range of protocol versions the
	// member speaks; 0 when unknown (an older member).
	ProtocolMin, ProtocolMax uint8
	// Features are what the member can do that older members cannot; 0
	// for an older member.
	Features Features
}

// protocolRange is the range of protocol versions m's member accepts: a
// member that gossips none (none does since v0.1.0, but the field is
// optional) accepts only the version it speaks.
func (m meta) protocolRange() (lo, hi uint8) {
	if m.ProtocolMax == 0 {
		return m.ProtocolVersion, m.ProtocolVersion
	}
	return m.ProtocolMin, m.ProtocolMax
}

// encodeMeta encodes m, or fails when it does not fit memberlist's limit.
func encodeMeta(m meta) ([]byte, error) {
	buf := make([]byte, 0, 4+len(m.Role)+len(m.Datacenter)+len(m.RPCAddr)+len(m.Keys)+len(m.NodeID)+len(m.Build)+24)
	buf = append(buf, metaVersion)
	for _, f := range []struct {
		key byte
		val string
	}{
		{keyRole, string(m.Role)}, {keyDC, m.Datacenter}, {keyRPCAddr, m.RPCAddr},
		{keyProtocol, string([]byte{m.ProtocolVersion})},
		{keyWANPort, string([]byte{byte(m.WANPort >> 8), byte(m.WANPort)})},
		{keyKeys, string(m.Keys)},
		{keyNodeID, m.NodeID}, {keyBuild, m.Build},
		{keyVersions, string([]byte{m.ProtocolMin, m.ProtocolMax})},
		{keyFeatures, string([]byte{byte(m.Features)})},
	} {
		if f.key == keyRPCAddr && f.val == "" || f.key == keyWANPort && m.WANPort == 0 || f.key == keyKeys && m.Keys == "" ||
			f.key == keyNodeID && f.val == "" || f.key == keyBuild && f.val == "" || f.key == keyVersions && m.ProtocolMin == 0 && m.ProtocolMax == 0 ||
			f.key == keyFeatures && m.Features == 0 {
			continue
		}
		if f.key == keyKeys {
			if err := m.Keys.check(); err != nil {
				return nil, err
			}
		}
		if len(f.val) > 255 {
			return nil, fmt.Errorf("metadata field %q is %d bytes, more than 255", f.key, len(f.val))
		}
		buf = append(buf, f.key, byte(len(f.val)))
		buf = append(buf, f.val...)
	}
	if len(buf) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("metadata is %d bytes, more than memberlist's %d", len(buf), memberlist.MetaMaxSize)
	}
	return buf, nil
}

// decodeMeta decodes metadata received from the network. It never panics,
// reads nothing past b, and returns an error wrapping ErrBadMeta for any
// input encodeMeta cannot have produced (except unknown keys, which it
// skips).
func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) == 0 {
		return m, fmt.Errorf("%w: empty", ErrBadMeta)
	}
	if len(b) > memberlist.MetaMaxSize {
		return m, fmt.Errorf("%w: %d bytes, more than %d", ErrBadMeta, len(b), memberlist.MetaMaxSize)
	}
	if b[0] != metaVersion {
		return m, fmt.Errorf("%w: unsupported version %d", ErrBadMeta, b[0])
	}
	var seen [256]bool
	for rest := b[1:]; len(rest) > 0; {
		if len(rest) < 2 {
			return m, fmt.Errorf("%w: truncated field header", ErrBadMeta)
		}
		key, n := rest[0], int(rest[1])
		if len(rest) < 2+n {
			return m, fmt.Errorf("%w: field %q wants %d bytes, %d left", ErrBadMeta, key, n, len(rest)-2)
		}
		val := rest[2 : 2+n]
		rest = rest[2+n:]
		if seen[key] {
			return m, fmt.Errorf("%w: field %q repeated", ErrBadMeta, key)
		}
		seen[key] = true
		switch key {
		case keyRole:
			m.Role = Role(val)
		case keyDC:
			m.Datacenter = string(val)
		case keyRPCAddr:
			m.RPCAddr = string(val)
		case keyProtocol:
			if n != 1 {
				return m, fmt.Errorf("%w: protocol version is %d bytes, want 1", ErrBadMeta, n)
			}
			m.ProtocolVersion = val[0]
		case keyWANPort:
			if n != 2 {
				return m, fmt.Errorf("%w: WAN port is %d bytes, want 2", ErrBadMeta, n)
			}
			m.WANPort = uint16(val[0])<<8 | uint16(val[1])
		case keyNodeID:
			m.NodeID = string(val)
		case keyBuild:
			m.Build = string(val)
		case keyVersions:
			if n != 2 {
				return m, fmt.Errorf("%w: protocol versions are %d bytes, want 2", ErrBadMeta, n)
			}
			m.ProtocolMin, m.ProtocolMax = val[0], val[1]
		case keyFeatures:
			if n != 1 {
				return m, fmt.Errorf("%w: features are %d bytes, want 1", ErrBadMeta, n)
			}
			m.Features = Features(val[0])
		case keyKeys:
			m.Keys = fingerprints(val)
			if err := m.Keys.check(); err != nil {
				return m, fmt.Errorf("%w: %w", ErrBadMeta, err)
			}
		}
	}
	return m, m.check()
}

// check validates decoded metadata.
func (m meta) check() error {
	if !m.Role.valid() {
		return fmt.Errorf("%w: role %q", ErrBadMeta, m.Role)
	}
	if why := validLabel(m.Datacenter); why != "" {
		return fmt.Errorf("%w: datacenter %q %s", ErrBadMeta, m.Datacenter, why)
	}
	if m.ProtocolVersion == 0 {
		return fmt.Errorf("%w: protocol version missing", ErrBadMeta)
	}
	switch {
	case m.Role == RoleServer && m.RPCAddr == "":
		return fmt.Errorf("%w: server without RPC address", ErrBadMeta)
	case m.Role == RoleClient && m.RPCAddr != "":
		return fmt.Errorf("%w: client with RPC address %q", ErrBadMeta, m.RPCAddr)
	case m.RPCAddr != "":
		if why := validHostPort(m.RPCAddr); why != "" {
			return fmt.Errorf("%w: RPC address %s", ErrBadMeta, why)
		}
	}
	return nil
}
