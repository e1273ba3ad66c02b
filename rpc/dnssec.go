package rpc

// MethodOperatorDNSSECKey is what an agent that signs DNS answers asks
// for: the datacenter's DNSSEC key.
const MethodOperatorDNSSECKey = OperatorEndpoint + ".DNSSECKey"

// DNSSECAlgorithmECDSAP256 is the DNSSEC algorithm number of the keys
// cairn signs with (13, ECDSA P-256 with SHA-256).
const DNSSECAlgorithmECDSAP256 = 13

// DNSSECKey is the datacenter's DNSSEC signing key as Raft holds it: the
// leader stores it from its key file, or makes one (dns_config.dnssec),
// and every agent that signs answers reads it.
type DNSSECKey struct {
	// Algorithm is the DNSSEC algorithm number: always
	// DNSSECAlgorithmECDSAP256.
	Algorithm uint8
	// PrivateKey is the ECDSA P-256 private key, SEC 1 DER encoded
	// (x509.MarshalECPrivateKey); in Raft sealed when SealedWith is set.
	PrivateKey []byte
	// SealedWith names the key PrivateKey is sealed with at rest (a key
	// derived from a gossip encryption key); "" when it is in the clear,
	// as the Operator endpoint always hands it out.
	SealedWith string
	// Generated says the leader made the key (dnssec.auto) rather than
	// reading it from a key file.
	Generated   bool
	CreateIndex uint64
	ModifyIndex uint64
}

// DNSSECKeyRequest asks for the datacenter's DNSSEC key. Node names the
// asking agent's node: the token must be allowed to write it (node:write), as the
// agent token of that node does, since the key lets its holder sign any
// answer of the zone.
type DNSSECKeyRequest struct {
	QueryOptions
	Forwarded bool
	Node      string
}

// DNSSECKeyResponse holds the key, nil when the datacenter has none.
type DNSSECKeyResponse struct {
	QueryMeta
	Key *DNSSECKey
}
