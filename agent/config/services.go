package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/hcl/token"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// ServiceDefinition is a service of the config file (Consul's service and
// services blocks): the agent registers it at start and on every reload,
// as PUT /v1/agent/service/register would, and removes it once the file
// no longer holds it.
type ServiceDefinition struct {
	Service catalog.Service
	Checks  []*checks.Definition
	// Token is the ACL token the service is synced with ("" for the
	// agent's own).
	Token string
}

// fileServiceKeys are the service and services keys of the config file.
// In HCL, service may be given once per service; in JSON, service holds
// one object (or a list) and services a list.
type fileServiceKeys struct {
	Service  []fileService `hcl:"service" json:"service"`
	Services []fileService `hcl:"services" json:"services"`
}

// fileService is one service definition, under Consul's keys.
type fileService struct {
	ID                *string                       `hcl:"id" json:"id"`
	Name              *string                       `hcl:"name" json:"name"`
	Tags              []string                      `hcl:"tags" json:"tags"`
	Address           *string                       `hcl:"address" json:"address"`
	Port              *int                          `hcl:"port" json:"port"`
	Meta              map[string]string             `hcl:"meta" json:"meta"`
	Weights           *fileWeights                  `hcl:"weights" json:"weights"`
	TaggedAddresses   map[string]fileServiceAddress `hcl:"tagged_addresses" json:"tagged_addresses"`
	EnableTagOverride *bool                         `hcl:"enable_tag_override" json:"enable_tag_override"`
	SocketPath        *string                       `hcl:"socket_path" json:"socket_path"`
	Ports             blocks[fileServicePort]       `hcl:"ports" json:"ports"`
	Locality          *fileLocality                 `hcl:"locality" json:"locality"`
	Token             *string                       `hcl:"token" json:"token"`
	Check             *fileCheck                    `hcl:"check" json:"check"`
	Checks            blocks[fileCheck]             `hcl:"checks" json:"checks"`
}

type fileWeights struct {
	Passing *int `hcl:"passing" json:"passing"`
	Warning *int `hcl:"warning" json:"warning"`
}

type fileServiceAddress struct {
	Address *string `hcl:"address" json:"address"`
	Port    *int    `hcl:"port" json:"port"`
}

type fileServicePort struct {
	Name    *string `hcl:"name" json:"name"`
	Port    *int    `hcl:"port" json:"port"`
	Default *bool   `hcl:"default" json:"default"`
}

type fileLocality struct {
	Region *string `hcl:"region" json:"region"`
	Zone   *string `hcl:"zone" json:"zone"`
}

// fileCheck is one check of a service definition, under Consul's keys.
type fileCheck struct {
	ID                             *string             `hcl:"id" json:"id"`
	CheckID                        *string             `hcl:"check_id" json:"check_id"`
	Name                           *string             `hcl:"name" json:"name"`
	Notes                          *string             `hcl:"notes" json:"notes"`
	Status                         *string             `hcl:"status" json:"status"`
	HTTP                           *string             `hcl:"http" json:"http"`
	Method                         *string             `hcl:"method" json:"method"`
	Header                         map[string][]string `hcl:"header" json:"header"`
	Body                           *string             `hcl:"body" json:"body"`
	TLSSkipVerify                  *bool               `hcl:"tls_skip_verify" json:"tls_skip_verify"`
	TLSServerName                  *string             `hcl:"tls_server_name" json:"tls_server_name"`
	TCP                            *string             `hcl:"tcp" json:"tcp"`
	UDP                            *string             `hcl:"udp" json:"udp"`
	GRPC                           *string             `hcl:"grpc" json:"grpc"`
	GRPCUseTLS                     *bool               `hcl:"grpc_use_tls" json:"grpc_use_tls"`
	TTL                            *string             `hcl:"ttl" json:"ttl"`
	Args                           []string            `hcl:"args" json:"args"`
	AliasService                   *string             `hcl:"alias_service" json:"alias_service"`
	AliasNode                      *string             `hcl:"alias_node" json:"alias_node"`
	DockerContainerID              *string             `hcl:"docker_container_id" json:"docker_container_id"`
	Shell                          *string             `hcl:"shell" json:"shell"`
	Interval                       *string             `hcl:"interval" json:"interval"`
	Timeout                        *string             `hcl:"timeout" json:"timeout"`
	SuccessBeforePassing           *int                `hcl:"success_before_passing" json:"success_before_passing"`
	FailuresBeforeWarning          *int                `hcl:"failures_before_warning" json:"failures_before_warning"`
	FailuresBeforeCritical         *int                `hcl:"failures_before_critical" json:"failures_before_critical"`
	DeregisterCriticalServiceAfter *string             `hcl:"deregister_critical_service_after" json:"deregister_critical_service_after"`
	OutputMaxSize                  *int                `hcl:"output_max_size" json:"output_max_size"`
}

// apply adds the file's services to c.Services: as in Consul, each config
// file read adds its own.
func (k *fileServiceKeys) apply(c *Config) error {
	for _, list := range []struct {
		key  string
		svcs []fileService
	}{{"service", k.Service}, {"services", k.Services}} {
		for i := range list.svcs {
			def, err := list.svcs[i].definition(fmt.Sprintf("%s[%d]", list.key, i))
			if err != nil {
				return err
			}
			c.Services = append(c.Services, def)
		}
	}
	return nil
}

func (f *fileService) definition(key string) (ServiceDefinition, error) {
	var d ServiceDefinition
	s := &d.Service
	setIf(&s.ID, f.ID)
	setIf(&s.Service, f.Name)
	setIf(&s.Address, f.Address)
	setIf(&s.Port, f.Port)
	setIf(&s.EnableTagOverride, f.EnableTagOverride)
	setIf(&s.SocketPath, f.SocketPath)
	setIf(&d.Token, f.Token)
	s.Tags, s.Meta = f.Tags, f.Meta
	if f.Weights != nil {
		setIf(&s.Weights.Passing, f.Weights.Passing)
		setIf(&s.Weights.Warning, f.Weights.Warning)
	}
	for tag, a := range f.TaggedAddresses {
		if s.TaggedAddresses == nil {
			s.TaggedAddresses = map[string]catalog.ServiceAddress{}
		}
		var sa catalog.ServiceAddress
		setIf(&sa.Address, a.Address)
		setIf(&sa.Port, a.Port)
		s.TaggedAddresses[tag] = sa
	}
	for _, p := range f.Ports {
		var sp catalog.ServicePort
		setIf(&sp.Name, p.Name)
		setIf(&sp.Port, p.Port)
		setIf(&sp.Default, p.Default)
		s.Ports = append(s.Ports, sp)
	}
	if f.Locality != nil {
		s.Locality = &catalog.Locality{}
		setIf(&s.Locality.Region, f.Locality.Region)
		setIf(&s.Locality.Zone, f.Locality.Zone)
	}
	if f.Check != nil {
		def, err := f.Check.definition(key + ".check")
		if err != nil {
			return d, err
		}
		d.Checks = append(d.Checks, def)
	}
	for i := range f.Checks {
		def, err := f.Checks[i].definition(fmt.Sprintf("%s.checks[%d]", key, i))
		if err != nil {
			return d, err
		}
		d.Checks = append(d.Checks, def)
	}
	return d, nil
}

func (f *fileCheck) definition(key string) (*checks.Definition, error) {
	d := &checks.Definition{Header: f.Header, Args: f.Args}
	if f.ID != nil && f.CheckID != nil && *f.ID != *f.CheckID {
		return nil, &FieldError{Field: key + ".check_id", Reason: fmt.Sprintf("conflicts with id %q: give one of them", *f.ID)}
	}
	setIf(&d.ID, f.CheckID)
	setIf(&d.ID, f.ID)
	for _, p := range []struct {
		dst *string
		v   *string
	}{
		{&d.Name, f.Name}, {&d.Notes, f.Notes}, {&d.HTTP, f.HTTP}, {&d.Method, f.Method}, {&d.Body, f.Body},
		{&d.TLSServerName, f.TLSServerName}, {&d.TCP, f.TCP}, {&d.UDP, f.UDP}, {&d.GRPC, f.GRPC},
		{&d.AliasService, f.AliasService}, {&d.AliasNode, f.AliasNode},
		{&d.DockerContainerID, f.DockerContainerID}, {&d.Shell, f.Shell},
	} {
		setIf(p.dst, p.v)
	}
	if f.Status != nil {
		d.Status = catalog.HealthStatus(*f.Status)
	}
	setIf(&d.TLSSkipVerify, f.TLSSkipVerify)
	setIf(&d.GRPCUseTLS, f.GRPCUseTLS)
	setIf(&d.SuccessBeforePassing, f.SuccessBeforePassing)
	setIf(&d.FailuresBeforeWarning, f.FailuresBeforeWarning)
	setIf(&d.FailuresBeforeCritical, f.FailuresBeforeCritical)
	setIf(&d.OutputMaxSize, f.OutputMaxSize)
	for _, t := range []struct {
		name string
		v    *string
		dst  *time.Duration
	}{
		{"ttl", f.TTL, &d.TTL}, {"interval", f.Interval, &d.Interval}, {"timeout", f.Timeout, &d.Timeout},
		{"deregister_critical_service_after", f.DeregisterCriticalServiceAfter, &d.DeregisterCriticalServiceAfter},
	} {
		if t.v == nil || *t.v == "" {
			continue
		}
		v, err := time.ParseDuration(strings.TrimSpace(*t.v))
		if err != nil {
			return nil, &FieldError{Field: key + "." + t.name, Reason: fmt.Sprintf("invalid duration %q: want a number and a unit, such as \"10s\"", *t.v)}
		}
		*t.dst = v
	}
	return d, nil
}

// validateServices checks the config file's services as a registration is
// checked, naming the first bad field under its service's key
// (services[1].Port, services[0].Checks[0].Interval).
func (c *Config) validateServices(bad func(field, format string, args ...any)) {
	seen := map[string]int{}
	for i, def := range c.Services {
		key := fmt.Sprintf("services[%d]", i)
		svc := def.Service
		if err := catalog.NormalizeService(&svc); err != nil {
			bad(key+"."+fieldOf(err), "%s", reasonOf(err))
			return
		}
		if j, dup := seen[svc.ID]; dup {
			bad(key+".id", "%q is also the ID of services[%d]", svc.ID, j)
			return
		}
		seen[svc.ID] = i
		for j, chk := range def.Checks {
			cd := *chk
			cd.ServiceID = svc.ID
			if cd.ID == "" && len(def.Checks) > 1 {
				cd.ID = fmt.Sprintf("service:%s:%d", svc.ID, j+1)
			}
			if err := cd.Validate(fmt.Sprintf("Checks[%d].", j), c.EnableScriptChecks); err != nil {
				bad(key+"."+fieldOf(err), "%s", reasonOf(err))
				return
			}
		}
	}
}

func fieldOf(err error) string {
	if fe, ok := err.(*catalog.FieldError); ok {
		return fe.Field
	}
	return "service"
}

func reasonOf(err error) string {
	if fe, ok := err.(*catalog.FieldError); ok {
		return fe.Reason
	}
	return err.Error()
}

// takeServices removes the service and services keys from a checked file
// and returns them decoded. hcl's decoder cannot decode a list of blocks
// that JSON and HCL write in different shapes (one object, a list, a
// block per service), so they are read here from the syntax tree.
func takeServices(f *ast.File) (fileServiceKeys, error) {
	var k fileServiceKeys
	root, ok := f.Node.(*ast.ObjectList)
	if !ok {
		return k, nil
	}
	raw := map[string][]any{}
	var rest []*ast.ObjectItem
	for _, item := range root.Items {
		name := keyName(item.Keys[0])
		if name != "service" && name != "services" {
			rest = append(rest, item)
			continue
		}
		switch v := astValue(itemValue(item), reflect.TypeFor[[]fileService]()).(type) {
		case []any:
			raw[name] = append(raw[name], v...)
		default:
			raw[name] = append(raw[name], v)
		}
	}
	if len(raw) == 0 {
		return k, nil
	}
	root.Items = rest
	b, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return k, &FieldError{Field: "services", Reason: err.Error()}
	}
	return k, nil
}

// astValue turns a piece of the syntax tree into the value encoding/json
// would have decoded into a field of type t: objects into maps (a key
// given twice, as HCL's repeated blocks, into a list), lists into slices,
// literals into their values. checkFile has let through what hcl reads
// leniently (a number for a string, a quoted whole number for an int);
// those are converted here to what the field takes, so that the decoding
// that follows fails only where checkFile would have.
func astValue(node ast.Node, t reflect.Type) any {
	if t == nil {
		t = reflect.TypeFor[any]() // a key checkFile has refused already
	}
	t = deref(t)
	switch n := node.(type) {
	case *ast.ObjectType:
		return astValue(n.List, t)
	case *ast.ObjectList:
		if t.Kind() == reflect.Slice { // one block of a list of blocks
			t = deref(t.Elem())
		}
		fields := map[string]reflect.Type{}
		if t.Kind() == reflect.Struct {
			tagFields(t, fields)
		}
		out := map[string]any{}
		for _, item := range n.Items {
			name := keyName(item.Keys[0])
			ft := fields[name]
			if t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			v := astValue(itemValue(item), ft)
			switch prev := out[name].(type) {
			case nil:
				out[name] = v
			case map[string]any:
				if m, ok := v.(map[string]any); ok && len(item.Keys) > 1 {
					maps.Copy(prev, m) // labels: "tagged_addresses" "lan" {…}
				} else {
					out[name] = []any{prev, v}
				}
			case []any:
				out[name] = append(prev, v)
			default:
				out[name] = []any{prev, v}
			}
		}
		return out
	case *ast.ListType:
		var elem reflect.Type
		if t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		out := make([]any, len(n.List))
		for i, e := range n.List {
			out[i] = astValue(e, elem)
		}
		return out
	case *ast.LiteralType:
		v := n.Token.Value()
		switch t.Kind() {
		case reflect.String:
			if n.Token.Type == token.NUMBER || n.Token.Type == token.FLOAT {
				return n.Token.Text
			}
		case reflect.Int:
			if s, ok := v.(string); ok {
				if i, err := strconv.ParseInt(s, 0, 0); err == nil {
					return i
				}
			}
		}
		return v
	}
	return nil
}

// blocks is a list of blocks, which a file may give as one block (HCL's
// parser turns a JSON list of one object into the object).
type blocks[T any] []T

func (b *blocks[T]) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var one T
		if err := json.Unmarshal(data, &one); err != nil {
			return err
		}
		*b = blocks[T]{one}
		return nil
	}
	return json.Unmarshal(data, (*[]T)(b))
}
