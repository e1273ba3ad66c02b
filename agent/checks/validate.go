package checks

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// Defaults Validate fills in.
const (
	// DefaultTimeout bounds one run when the definition sets no Timeout.
	DefaultTimeout = 10 * time.Second
	// DefaultOutputMaxSize caps the output kept from one run.
	DefaultOutputMaxSize = 4096
)

// MinInterval is the shortest Interval, Timeout and TTL a check may have.
//
// It is not Consul's 1s: sub-second checks are a fair wish when the point
// is to take a dead instance out of DNS fast, and tests want them too. What
// the floor does catch is the units mistake: in JSON a bare number is
// nanoseconds, so "Interval": 10 means 10ns, not 10s, and would make the
// agent probe its service in a busy loop. Nothing below 10ms is a
// deliberate health-check period (a probe's own syscalls and scheduling
// take a good part of that), so anything smaller is refused, not clamped.
const MinInterval = 10 * time.Millisecond

// Validate checks d and fills in its defaults: Status critical, Timeout
// DefaultTimeout, Method GET, OutputMaxSize DefaultOutputMaxSize, Name from
// the kind and target, and ID "service:<ServiceID>" for a service's check
// (a node-level check must name its ID). A Timeout longer than Interval,
// given or defaulted, is cut to Interval: runs of one check never overlap,
// so a longer one would only stretch the period. Validate is idempotent.
//
// enableScripts says whether checks that run programs (Args) are allowed.
//
// The error, if any, is a *catalog.FieldError for the first bad field,
// named prefix + the field's JSON name (prefix "Check." or "Checks[1]."
// lets an HTTP handler report the field as the user wrote it).
func (d *Definition) Validate(prefix string, enableScripts bool) error {
	fe := func(field, format string, args ...any) error {
		return &catalog.FieldError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	kinds := d.kindFields()
	switch {
	case len(kinds) == 0:
		whole := strings.TrimSuffix(prefix, ".")
		if whole == "" {
			whole = "Check"
		}
		return &catalog.FieldError{Field: whole, Reason: "no kind of check set: set one of HTTP, TCP, UDP, GRPC, TTL, Args, DockerContainerID (with Args) or AliasService/AliasNode"}
	case len(kinds) > 1:
		return fe(kinds[1], "only one kind of check may be set, and %s is set too", kinds[0])
	}
	if err := d.validateTarget(fe, enableScripts); err != nil {
		return err
	}
	if err := d.validateTiming(fe); err != nil {
		return err
	}
	if err := d.validateThresholds(fe); err != nil {
		return err
	}
	switch d.Status {
	case "":
		d.Status = catalog.HealthCritical
	case catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical:
	default:
		// Maintenance is set by maintenance mode, never by a check.
		return fe("Status", "%q is not a check status: use passing, warning or critical", d.Status)
	}
	if d.ID == "" {
		if d.ServiceID == "" {
			return fe("ID", "required for a check that is not bound to a service (no ServiceID)")
		}
		d.ID = "service:" + d.ServiceID
	}
	if d.Name == "" {
		d.Name = d.defaultName()
	}
	return nil
}

// kindFields returns the JSON names of the kinds d sets, in Type's order;
// AliasService and AliasNode together are one kind.
func (d *Definition) kindFields() []string {
	var k []string
	add := func(set bool, name string) {
		if set {
			k = append(k, name)
		}
	}
	add(d.HTTP != "", "HTTP")
	add(d.TCP != "", "TCP")
	add(d.UDP != "", "UDP")
	add(d.GRPC != "", "GRPC")
	add(d.TTL != 0, "TTL")
	add(len(d.Args) > 0 && d.DockerContainerID == "", "Args")
	add(d.DockerContainerID != "", "DockerContainerID")
	add(d.AliasService != "", "AliasService")
	add(d.AliasService == "" && d.AliasNode != "", "AliasNode")
	return k
}

type fieldErrFunc func(field, format string, args ...any) error

// validateTarget checks what the check probes and fills Method.
func (d *Definition) validateTarget(fe fieldErrFunc, enableScripts bool) error {
	switch d.Type() {
	case TypeHTTP:
		if err := checkURL(d.HTTP); err != nil {
			return fe("HTTP", "%v", err)
		}
		if d.Method == "" {
			d.Method = "GET"
		} else if !isToken(d.Method) {
			return fe("Method", "%q is not an HTTP method", d.Method)
		}
		for k, vs := range d.Header {
			if !isToken(k) {
				return fe("Header", "%q is not a header name", k)
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					return fe("Header", "the value of %s holds a line break or NUL", k)
				}
			}
		}
	case TypeTCP:
		if err := checkHostPort(d.TCP); err != nil {
			return fe("TCP", "%v", err)
		}
	case TypeUDP:
		if err := checkHostPort(d.UDP); err != nil {
			return fe("UDP", "%v", err)
		}
	case TypeGRPC:
		addr, _, _ := strings.Cut(d.GRPC, "/")
		if err := checkHostPort(addr); err != nil {
			return fe("GRPC", "want host:port[/service]: %v", err)
		}
	case TypeTTL:
		if d.TTL < MinInterval {
			return fe("TTL", "%s is too short: at least %s (a bare number is nanoseconds)", d.TTL, MinInterval)
		}
	case TypeScript:
		if !enableScripts {
			return fe("Args", "script checks are disabled; start the agent with -enable-script-checks")
		}
		if d.Args[0] == "" {
			return fe("Args", "the program (Args[0]) is empty")
		}
	case TypeDocker:
		if !enableScripts {
			return fe("DockerContainerID", "docker checks run programs and are disabled; start the agent with -enable-script-checks")
		}
		if len(d.Args) == 0 || d.Args[0] == "" {
			return fe("Args", "the command to run in container %s is required", d.DockerContainerID)
		}
	case TypeAlias:
		if d.AliasService != "" && d.AliasService == d.ServiceID && d.AliasNode == "" {
			return fe("AliasService", "a check cannot alias the service it belongs to")
		}
	}
	return nil
}

// validateTiming checks Interval and Timeout and fills Timeout.
func (d *Definition) validateTiming(fe fieldErrFunc) error {
	switch t := d.Type(); {
	case d.Interval < 0:
		return fe("Interval", "must not be negative")
	case d.Interval == 0 && t != TypeTTL && t != TypeAlias:
		return fe("Interval", "required for %s checks", t)
	case d.Interval > 0 && d.Interval < MinInterval:
		return fe("Interval", "%s is too short: at least %s (a bare number is nanoseconds)", d.Interval, MinInterval)
	}
	switch {
	case d.Timeout < 0:
		return fe("Timeout", "must not be negative")
	case d.Timeout == 0:
		d.Timeout = DefaultTimeout
	case d.Timeout < MinInterval:
		return fe("Timeout", "%s is too short: at least %s (a bare number is nanoseconds)", d.Timeout, MinInterval)
	}
	if d.Interval > 0 && d.Timeout > d.Interval {
		d.Timeout = d.Interval
	}
	if d.DeregisterCriticalServiceAfter < 0 {
		return fe("DeregisterCriticalServiceAfter", "must not be negative")
	}
	return nil
}

// validateThresholds checks the thresholds and fills OutputMaxSize.
func (d *Definition) validateThresholds(fe fieldErrFunc) error {
	switch {
	case d.SuccessBeforePassing < 0:
		return fe("SuccessBeforePassing", "must not be negative")
	case d.FailuresBeforeWarning < 0:
		return fe("FailuresBeforeWarning", "must not be negative")
	case d.FailuresBeforeCritical < 0:
		return fe("FailuresBeforeCritical", "must not be negative")
	case d.FailuresBeforeWarning > 0 && d.FailuresBeforeWarning > d.FailuresBeforeCritical:
		// Critical would come first, so warning could never be reached:
		// the user surely meant something else.
		return fe("FailuresBeforeWarning", "%d is more than FailuresBeforeCritical (%d): the check would never turn warning", d.FailuresBeforeWarning, d.FailuresBeforeCritical)
	case d.OutputMaxSize < 0:
		return fe("OutputMaxSize", "must not be negative")
	case d.OutputMaxSize == 0:
		d.OutputMaxSize = DefaultOutputMaxSize
	}
	return nil
}

// defaultName names a check after its kind and target.
func (d *Definition) defaultName() string {
	switch d.Type() {
	case TypeHTTP:
		return "HTTP " + d.Method + " " + d.HTTP
	case TypeTCP:
		return "TCP " + d.TCP
	case TypeUDP:
		return "UDP " + d.UDP
	case TypeGRPC:
		return "gRPC " + d.GRPC
	case TypeTTL:
		return "TTL " + d.TTL.String()
	case TypeScript:
		return "Script " + d.Args[0]
	case TypeDocker:
		return "Docker " + d.DockerContainerID + " " + d.Args[0]
	case TypeAlias:
		if d.AliasService == "" {
			return "Alias node " + d.AliasNode
		}
		if d.AliasNode != "" {
			return "Alias " + d.AliasService + " on " + d.AliasNode
		}
		return "Alias " + d.AliasService
	}
	return ""
}

// checkURL accepts an absolute http or https URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: the scheme must be http or https", s)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// checkHostPort accepts host:port with a host and a numeric port.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token, the syntax of methods
// and header names.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
