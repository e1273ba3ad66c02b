package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// checkBody is one check as a request carries it: Consul's AgentServiceCheck
// (the Check and Checks of a service registration) and, with ID and
// ServiceID, its AgentCheckRegistration (PUT /v1/agent/check/register).
// Keys match in any case, as everywhere in the API.
type checkBody struct {
	// ID is the check's ID in Consul's check definitions; CheckID its name
	// in AgentServiceCheck. Either may be given, not two different ones.
	ID        string
	CheckID   string
	Name      string
	Notes     string
	ServiceID string
	Status    string

	HTTP          string
	Method        string
	Header        map[string][]string
	Body          string
	TLSSkipVerify bool
	TLSServerName string
	TCP           string
	UDP           string
	GRPC          string
	GRPCUseTLS    bool
	TTL           duration
	// Args is the command of a script check; ScriptArgs is the name
	// Consul's Go client sends it under.
	Args         []string
	ScriptArgs   []string
	AliasService string
	AliasNode    string
	// DockerContainerID and Shell make a docker check (with Args).
	DockerContainerID string
	Shell             string

	Interval                       duration
	Timeout                        duration
	SuccessBeforePassing           int
	FailuresBeforeWarning          int
	FailuresBeforeCritical         int
	DeregisterCriticalServiceAfter duration
	OutputMaxSize                  int
}

// definition turns the body into a check definition. Field errors name
// the field with prefix in front ("Check.Interval"). It does not validate
// the definition beyond what decoding needs: Definition.Validate does.
func (b *checkBody) definition(prefix string) (*checks.Definition, error) {
	id := b.ID
	switch {
	case id == "":
		id = b.CheckID
	case b.CheckID != "" && b.CheckID != id:
		return nil, badRequest(prefix+"CheckID", "conflicts with ID %q: give one of them", id)
	}
	args := b.Args
	switch {
	case len(args) == 0:
		args = b.ScriptArgs
	case len(b.ScriptArgs) > 0:
		return nil, badRequest(prefix+"ScriptArgs", "give the command in Args or in ScriptArgs, not both")
	}
	d := &checks.Definition{
		ID: id, Name: b.Name, Notes: b.Notes, ServiceID: b.ServiceID,
		Status: catalog.HealthStatus(b.Status),
		HTTP:   b.HTTP, Method: b.Method, Header: b.Header, Body: b.Body,
		TLSSkipVerify: b.TLSSkipVerify, TLSServerName: b.TLSServerName,
		TCP: b.TCP, UDP: b.UDP, GRPC: b.GRPC, GRPCUseTLS: b.GRPCUseTLS,
		Args: args, AliasService: b.AliasService, AliasNode: b.AliasNode,
		DockerContainerID: b.DockerContainerID, Shell: b.Shell,
		SuccessBeforePassing:   b.SuccessBeforePassing,
		FailuresBeforeWarning:  b.FailuresBeforeWarning,
		FailuresBeforeCritical: b.FailuresBeforeCritical,
		OutputMaxSize:          b.OutputMaxSize,
	}
	for _, f := range []struct {
		name string
		in   duration
		out  *time.Duration
	}{
		{"TTL", b.TTL, &d.TTL},
		{"Interval", b.Interval, &d.Interval},
		{"Timeout", b.Timeout, &d.Timeout},
		{"DeregisterCriticalServiceAfter", b.DeregisterCriticalServiceAfter, &d.DeregisterCriticalServiceAfter},
	} {
		v, err := f.in.parse(prefix + f.name)
		if err != nil {
			return nil, err
		}
		*f.out = v
	}
	return d, nil
}

// duration is a duration field of a request: a Go duration string ("10s",
// "1m30s") as Consul's clients send it, or a JSON number of nanoseconds.
// Decoding only keeps the raw value; parse reads it, so that an error can
// name the field with its full path ("Checks[1].Interval"), which
// encoding/json cannot do for a custom type.
type duration struct{ raw []byte }

func (d *duration) UnmarshalJSON(b []byte) error {
	d.raw = bytes.Clone(b)
	return nil
}

// parse returns the duration; absent, null and "" are 0.
func (d duration) parse(field string) (time.Duration, error) {
	raw := bytes.TrimSpace(d.raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var v time.Duration
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, badRequest(field, "must be a duration such as \"10s\", got %s", raw)
		}
		if s == "" {
			return 0, nil
		}
		p, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			// "invalid duration" is Consul's wording (Go's), which clients match.
			return 0, badRequest(field, "invalid duration %q: want a number and a unit, such as \"10s\" or \"1m30s\"", s)
		}
		v = p
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			// 1e10 is a JSON number too; it must still be whole nanoseconds.
			f, ferr := strconv.ParseFloat(string(raw), 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt64 {
				return 0, badRequest(field, "must be a duration such as \"10s\" or a whole number of nanoseconds, got %s", raw)
			}
			n = int64(f)
		}
		v = time.Duration(n)
	default:
		return 0, badRequest(field, "must be a duration such as \"10s\", got %s", raw)
	}
	if v < 0 {
		return 0, badRequest(field, "must not be negative, got %s", v)
	}
	return v, nil
}

// serviceChecks turns the Check and Checks of a service registration into
// validated definitions of the service svc: each gets the service's ID,
// an ID of its own when it has none (Consul's scheme: "service:<id>" for a
// service's only check, "service:<id>:<n>" for the n-th of several,
// counting Check first) and, when it has no name, Consul's "Service
// '<name>' check".
func (s *Server) serviceChecks(svc *catalog.Service, one *checkBody, many []*checkBody) ([]*checks.Definition, error) {
	serviceID := svc.ID
	type item struct {
		prefix string
		body   *checkBody
	}
	var items []item
	if one != nil {
		items = append(items, item{"Check.", one})
	}
	for i, b := range many {
		items = append(items, item{fmt.Sprintf("Checks[%d].", i), b})
	}
	defs := make([]*checks.Definition, 0, len(items))
	seen := make(map[string]string, len(items)) // check ID → prefix of the check that has it
	for i, it := range items {
		if it.body == nil {
			return nil, badRequest(strings.TrimSuffix(it.prefix, "."), "must be a check object, got null")
		}
		d, err := it.body.definition(it.prefix)
		if err != nil {
			return nil, err
		}
		d.ServiceID = serviceID
		idField := it.prefix + "CheckID"
		if it.body.ID != "" {
			idField = it.prefix + "ID"
		}
		if d.ID == "" {
			d.ID = "service:" + serviceID
			if len(items) > 1 {
				d.ID += ":" + strconv.Itoa(i+1)
			}
		}
		if d.Name == "" {
			d.Name = "Service '" + svc.Service + "' check"
		}
		if err := d.Validate(it.prefix, s.cfg.EnableScriptChecks); err != nil {
			return nil, err
		}
		if err := catalog.ValidateID(idField, d.ID); err != nil {
			return nil, err
		}
		if prev, dup := seen[d.ID]; dup {
			return nil, badRequest(idField, "%q is also the ID of %s", d.ID, strings.TrimSuffix(prev, "."))
		}
		seen[d.ID] = it.prefix
		defs = append(defs, d)
	}
	return defs, nil
}
