package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Limits on what a registration may carry. They keep every accepted value
// answerable in DNS and keep one registration from bloating the catalog.
const (
	MaxLabelLength  = 63  // RFC 1035 limit of one DNS label
	MaxIDLength     = 128 // service and check IDs
	MaxTags         = 64
	MaxMetaPairs    = 64
	MaxMetaKeyLen   = 128
	MaxMetaValueLen = 512
)

var metaKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidLabel reports why s cannot be one DNS label, or "" when it can: 1–63
// letters, digits and hyphens, not starting or ending with a hyphen (RFC 1123).
// Names are compared case-insensitively, as DNS does.
func ValidLabel(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > MaxLabelLength {
		return fmt.Sprintf("must be at most %d characters to be a DNS label, got %d", MaxLabelLength, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(s)-1 {
				return "must not start or end with '-' to be a DNS label"
			}
		default:
			return fmt.Sprintf("character %q is not allowed in a DNS label (letters, digits and '-' only)", c)
		}
	}
	return ""
}

// ValidateNodeName checks a node name.
func ValidateNodeName(field, name string) error {
	if r := ValidLabel(name); r != "" {
		return fieldErr(field, "%s", r)
	}
	return nil
}

// ValidateID checks a service or check ID: it appears in URL paths, so it
// must be non-empty printable ASCII without '/', '?', '#' or '%'.
func ValidateID(field, id string) error {
	if id == "" {
		return fieldErr(field, "must not be empty")
	}
	if len(id) > MaxIDLength {
		return fieldErr(field, "must be at most %d characters, got %d", MaxIDLength, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("/?#%", c) >= 0 {
			return fieldErr(field, "character %q is not allowed (printable ASCII without space, '/', '?', '#', '%%')", c)
		}
	}
	return nil
}

// validateTagged checks tagged addresses, whose address addr reads: tags
// as metadata keys, addresses not empty and as long as metadata values at
// most (an IP address or a host name: the catalog does not resolve them).
func validateTagged[V any](field string, tagged map[string]V, addr func(V) string) error {
	if len(tagged) > MaxMetaPairs {
		return fieldErr(field, "at most %d addresses are allowed, got %d", MaxMetaPairs, len(tagged))
	}
	for k, v := range tagged {
		addr := addr(v)
		if len(k) > MaxMetaKeyLen || !metaKeyRE.MatchString(k) {
			return fieldErr(field+"["+k+"]", "tag must be 1–%d letters, digits, '_' or '-'", MaxMetaKeyLen)
		}
		if addr == "" || len(addr) > MaxMetaValueLen {
			return fieldErr(field+"["+k+"]", "address must be 1–%d characters, got %d", MaxMetaValueLen, len(addr))
		}
	}
	return nil
}

// ValidateMeta checks metadata keys and values.
func ValidateMeta(field string, meta map[string]string) error {
	if len(meta) > MaxMetaPairs {
		return fieldErr(field, "at most %d pairs are allowed, got %d", MaxMetaPairs, len(meta))
	}
	for k, v := range meta {
		if len(k) > MaxMetaKeyLen || !metaKeyRE.MatchString(k) {
			return fieldErr(field+"["+k+"]", "key must be 1–%d letters, digits, '_' or '-'", MaxMetaKeyLen)
		}
		if len(v) > MaxMetaValueLen {
			return fieldErr(field+"["+k+"]", "value must be at most %d characters, got %d", MaxMetaValueLen, len(v))
		}
	}
	return nil
}

// serviceKinds are Consul's kinds of service, "" the typical one.
var serviceKinds = []string{"", "connect-proxy", "mesh-gateway", "terminating-gateway", "ingress-gateway", "api-gateway"}

// MaxProxyBytes bounds a service's Proxy configuration, kept for Consul's
// clients: a proxy with a few dozen upstreams fits.
const MaxProxyBytes = 64 << 10

// NormalizeService fills in defaults (ID from the name, default weights) and
// validates every field, so that everything accepted can be answered in DNS.
// It returns a *FieldError naming the first bad field.
func NormalizeService(s *Service) error {
	if s.Service == "" {
		return fieldErr("Name", "is required")
	}
	if r := ValidLabel(s.Service); r != "" {
		return fieldErr("Name", "%s", r)
	}
	if s.ID == "" {
		s.ID = s.Service
	}
	if err := ValidateID("ID", s.ID); err != nil {
		return err
	}
	if !slices.Contains(serviceKinds, s.Kind) {
		return fieldErr("Kind", "must be one of Consul's kinds %q, got %q", serviceKinds[1:], s.Kind)
	}
	if len(s.Proxy) > MaxProxyBytes {
		return fieldErr("Proxy", "must be at most %d bytes of JSON, got %d", MaxProxyBytes, len(s.Proxy))
	}
	if s.Proxy != nil && !json.Valid(s.Proxy) {
		return fieldErr("Proxy", "is not JSON")
	}
	if len(s.Tags) > MaxTags {
		return fieldErr("Tags", "at most %d tags are allowed, got %d", MaxTags, len(s.Tags))
	}
	for i, t := range s.Tags {
		if r := ValidLabel(t); r != "" {
			return fieldErr(fmt.Sprintf("Tags[%d]", i), "%s", r)
		}
	}
	if s.Address != "" {
		a, ok := canonicalIP(s.Address)
		if !ok {
			return fieldErr("Address", "%q is not an IP address", s.Address)
		}
		s.Address = a
	}
	if s.Port < 0 || s.Port > 65535 {
		return fieldErr("Port", "must be between 0 and 65535, got %d", s.Port)
	}
	if err := ValidateMeta("Meta", s.Meta); err != nil {
		return err
	}
	if err := validateTagged("TaggedAddresses", s.TaggedAddresses, func(a ServiceAddress) string { return a.Address }); err != nil {
		return err
	}
	for k, a := range s.TaggedAddresses {
		if a.Port < 0 || a.Port > 65535 {
			return fieldErr("TaggedAddresses["+k+"].Port", "must be between 0 and 65535, got %d", a.Port)
		}
	}
	if err := normalizePorts(s); err != nil {
		return err
	}
	if strings.ContainsRune(s.SocketPath, 0) {
		return fieldErr("SocketPath", "holds a NUL byte")
	}
	if s.Weights == (Weights{}) {
		s.Weights = DefaultWeights
	}
	if s.Weights.Passing < 1 || s.Weights.Passing > 65535 {
		return fieldErr("Weights.Passing", "must be between 1 and 65535, got %d", s.Weights.Passing)
	}
	if s.Weights.Warning < 0 || s.Weights.Warning > 65535 {
		return fieldErr("Weights.Warning", "must be between 0 and 65535, got %d", s.Weights.Warning)
	}
	return nil
}

// ValidateRegister checks a whole RegisterRequest, normalising its service.
func ValidateRegister(r *RegisterRequest) error {
	if err := ValidateNodeName("Node", r.Node); err != nil {
		return err
	}
	if r.Address == "" && !r.SkipNodeUpdate {
		return fieldErr("Address", "is required")
	}
	if r.Address != "" {
		a, ok := canonicalIP(r.Address)
		if !ok {
			return fieldErr("Address", "%q is not an IP address", r.Address)
		}
		r.Address = a
	}
	if err := ValidateMeta("NodeMeta", r.NodeMeta); err != nil {
		return err
	}
	if err := validateTagged("TaggedAddresses", r.TaggedAddresses, func(a string) string { return a }); err != nil {
		return err
	}
	if r.Service != nil {
		if err := NormalizeService(r.Service); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Field = "Service." + fe.Field
			}
			return err
		}
	}
	for i, c := range r.Checks {
		if err := ValidateID(fmt.Sprintf("Checks[%d].CheckID", i), c.CheckID); err != nil {
			return err
		}
		if !c.Status.Valid() {
			return fieldErr(fmt.Sprintf("Checks[%d].Status", i), "must be passing, warning, critical or maintenance, got %q", c.Status)
		}
		if err := ValidateCheckType(fmt.Sprintf("Checks[%d].Type", i), c.Type); err != nil {
			return err
		}
		if err := ValidateCheckOwner(fmt.Sprintf("Checks[%d].CheckID", i), c); err != nil {
			return err
		}
	}
	return nil
}

// ValidateCheckType checks a check's Type loosely: the catalog does not act
// on it, so any kind a newer agent invents is accepted, as long as it is
// empty or one lowercase word of 1–63 letters, digits and '-', starting
// with a letter and not ending with '-' ("http", "ttl", "gossip").
func ValidateCheckType(field, typ string) error {
	if typ == "" {
		return nil
	}
	if len(typ) > MaxLabelLength {
		return fieldErr(field, "must be at most %d characters, got %d", MaxLabelLength, len(typ))
	}
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9', c == '-':
			if i == 0 || (c == '-' && i == len(typ)-1) {
				return fieldErr(field, "must start with a lowercase letter and not end with '-', got %q", typ)
			}
		default:
			return fieldErr(field, "character %q is not allowed (lowercase letters, digits and '-' only)", c)
		}
	}
	return nil
}

// ValidateHealthState checks a state asked for in a query of checks by
// state: passing, warning, critical, maintenance or any (HealthAny), in
// lower case.
func ValidateHealthState(field, state string) error {
	if h := HealthStatus(state); h.Valid() || h == HealthAny {
		return nil
	}
	return fieldErr(field, "must be passing, warning, critical, maintenance or any, got %q", state)
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// normalizePorts checks a multi-port service's Ports as Consul does (named,
// names unique, ports 1–65535, exactly one Default) and gives a service
// without a Port its default port's: DNS answers need a port.
func normalizePorts(s *Service) error {
	if len(s.Ports) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(s.Ports))
	def := -1
	for i, p := range s.Ports {
		field := fmt.Sprintf("Ports[%d]", i)
		switch {
		case strings.TrimSpace(p.Name) == "":
			return fieldErr(field+".Name", "is required")
		case seen[p.Name]:
			return fieldErr(field+".Name", "%q is the name of another port", p.Name)
		case p.Port < 1 || p.Port > 65535:
			return fieldErr(field+".Port", "must be between 1 and 65535, got %d", p.Port)
		case p.Default && def >= 0:
			return fieldErr(field+".Default", "only one port can be the default, and Ports[%d] is", def)
		}
		seen[p.Name] = true
		if p.Default {
			def = i
		}
	}
	if def < 0 {
		return fieldErr("Ports", "one of the ports must be marked Default")
	}
	if s.Port == 0 {
		s.Port = s.Ports[def].Port
	}
	return nil
}
