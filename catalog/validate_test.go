package catalog_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// fieldOf returns the Field of err's *FieldError, failing the test when err
// is not one.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var fe *catalog.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error: got %v (%T), want a *catalog.FieldError", err, err)
	}
	if fe.Reason == "" {
		t.Errorf("FieldError %q: got an empty Reason, want one", fe.Field)
	}
	if got, want := fe.Error(), fe.Field+": "+fe.Reason; got != want {
		t.Errorf("Error(): got %q, want %q", got, want)
	}
	return fe.Field
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	return tags
}

func manyMeta(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestNormalizeServiceRejects(t *testing.T) {
	tests := []struct {
		name      string
		svc       catalog.Service
		wantField string
	}{
		{"no name", catalog.Service{}, "Name"},
		{"name with underscore", catalog.Service{Service: "my_web"}, "Name"},
		{"name with dot", catalog.Service{Service: "web.api"}, "Name"},
		{"name starting with hyphen", catalog.Service{Service: "-web"}, "Name"},
		{"name ending with hyphen", catalog.Service{Service: "web-"}, "Name"},
		{"name too long", catalog.Service{Service: strings.Repeat("a", 64)}, "Name"},
		{"ID with slash", catalog.Service{Service: "web", ID: "web/1"}, "ID"},
		{"ID with space", catalog.Service{Service: "web", ID: "web 1"}, "ID"},
		{"ID too long", catalog.Service{Service: "web", ID: strings.Repeat("a", 129)}, "ID"},
		{"too many tags", catalog.Service{Service: "web", Tags: manyTags(65)}, "Tags"},
		{"bad second tag", catalog.Service{Service: "web", Tags: []string{"ok", "not_ok"}}, "Tags[1]"},
		{"empty first tag", catalog.Service{Service: "web", Tags: []string{""}}, "Tags[0]"},
		{"tag too long", catalog.Service{Service: "web", Tags: []string{"a", "b", strings.Repeat("t", 64)}}, "Tags[2]"},
		{"address is a host name", catalog.Service{Service: "web", Address: "web.example.com"}, "Address"},
		{"address with port", catalog.Service{Service: "web", Address: "10.0.0.1:80"}, "Address"},
		{"negative port", catalog.Service{Service: "web", Port: -1}, "Port"},
		{"port too large", catalog.Service{Service: "web", Port: 65536}, "Port"},
		{"meta key with space", catalog.Service{Service: "web", Meta: map[string]string{"bad key": "v"}}, "Meta[bad key]"},
		{"meta value too long", catalog.Service{Service: "web", Meta: map[string]string{"k": strings.Repeat("v", 513)}}, "Meta[k]"},
		{"tagged address with a bad tag", catalog.Service{Service: "web", TaggedAddresses: map[string]catalog.ServiceAddress{"a b": {Address: "10.0.0.1"}}}, "TaggedAddresses[a b]"},
		{"tagged address without address", catalog.Service{Service: "web", TaggedAddresses: map[string]catalog.ServiceAddress{"wan": {Port: 80}}}, "TaggedAddresses[wan]"},
		{"tagged address port too large", catalog.Service{Service: "web", TaggedAddresses: map[string]catalog.ServiceAddress{"wan": {Address: "10.0.0.1", Port: 65536}}}, "TaggedAddresses[wan].Port"},
		{"too many meta pairs", catalog.Service{Service: "web", Meta: manyMeta(65)}, "Meta"},
		{"zero passing weight", catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 0, Warning: 1}}, "Weights.Passing"},
		{"passing weight too large", catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 65536, Warning: 1}}, "Weights.Passing"},
		{"negative warning weight", catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 1, Warning: -1}}, "Weights.Warning"},
		{"warning weight too large", catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 1, Warning: 65536}}, "Weights.Warning"},
		// The first bad field is the one named.
		{"bad name and port", catalog.Service{Service: "we b", Port: -1}, "Name"},
		{"bad tag and port", catalog.Service{Service: "web", Tags: []string{"a b"}, Port: -1}, "Tags[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := tt.svc
			err := catalog.NormalizeService(&svc)
			if err == nil {
				t.Fatalf("NormalizeService(%+v): got nil error, want one for %s", tt.svc, tt.wantField)
			}
			if got := fieldOf(t, err); got != tt.wantField {
				t.Errorf("Field: got %q, want %q (error %v)", got, tt.wantField, err)
			}
		})
	}
}

func TestNormalizeServiceAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   catalog.Service
		want catalog.Service
	}{
		{
			name: "defaults: ID from name, weights 1/1",
			in:   catalog.Service{Service: "web"},
			want: catalog.Service{ID: "web", Service: "web", Weights: catalog.Weights{Passing: 1, Warning: 1}},
		},
		{
			name: "given ID and weights are kept; warning may be 0",
			in:   catalog.Service{ID: "web-1", Service: "web", Weights: catalog.Weights{Passing: 3, Warning: 0}},
			want: catalog.Service{ID: "web-1", Service: "web", Weights: catalog.Weights{Passing: 3, Warning: 0}},
		},
		{
			name: "mixed-case name becomes the ID as written",
			in:   catalog.Service{Service: "Web"},
			want: catalog.Service{ID: "Web", Service: "Web", Weights: catalog.DefaultWeights},
		},
		{
			name: "everything at its limits",
			in: catalog.Service{
				ID: strings.Repeat("i", 128), Service: strings.Repeat("n", 63), Tags: manyTags(64),
				Address: "2001:db8::1", Port: 65535, Meta: manyMeta(64),
				Weights: catalog.Weights{Passing: 65535, Warning: 65535},
			},
			want: catalog.Service{
				ID: strings.Repeat("i", 128), Service: strings.Repeat("n", 63), Tags: manyTags(64),
				Address: "2001:db8::1", Port: 65535, Meta: manyMeta(64),
				Weights: catalog.Weights{Passing: 65535, Warning: 65535},
			},
		},
		{
			name: "IPv4 address, port 0, printable ID, meta key with _ and -",
			in: catalog.Service{ID: "web:1@a~b", Service: "web-2", Tags: []string{"Primary", "v1"},
				Address: "10.0.0.1", Meta: map[string]string{"a_B-9": "", "k": strings.Repeat("v", 512)}},
			want: catalog.Service{ID: "web:1@a~b", Service: "web-2", Tags: []string{"Primary", "v1"},
				Address: "10.0.0.1", Meta: map[string]string{"a_B-9": "", "k": strings.Repeat("v", 512)},
				Weights: catalog.DefaultWeights},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			if err := catalog.NormalizeService(&got); err != nil {
				t.Fatalf("NormalizeService: got %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NormalizeService: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// goodReq is a valid RegisterRequest; each call returns a fresh one.
func goodReq() *catalog.RegisterRequest {
	return &catalog.RegisterRequest{
		Datacenter: "dc1", Node: "node1", Address: "10.0.0.1",
		NodeMeta: map[string]string{"rack": "r1"},
		Service:  &catalog.Service{Service: "web", Tags: []string{"v1"}, Port: 80},
		Checks: []*catalog.Check{
			{CheckID: "serfHealth", Status: catalog.HealthPassing},
			{CheckID: "web-http", ServiceID: "web", Status: catalog.HealthMaintenance},
		},
	}
}

func TestValidateRegisterRejects(t *testing.T) {
	tests := []struct {
		name      string
		change    func(*catalog.RegisterRequest)
		wantField string
	}{
		{"no node", func(r *catalog.RegisterRequest) { r.Node = "" }, "Node"},
		{"bad node name", func(r *catalog.RegisterRequest) { r.Node = "node_1" }, "Node"},
		{"node name too long", func(r *catalog.RegisterRequest) { r.Node = strings.Repeat("n", 64) }, "Node"},
		{"no address", func(r *catalog.RegisterRequest) { r.Address = "" }, "Address"},
		{"address is a host name", func(r *catalog.RegisterRequest) { r.Address = "node1.example.com" }, "Address"},
		{"bad address with SkipNodeUpdate", func(r *catalog.RegisterRequest) { r.Address = "x"; r.SkipNodeUpdate = true }, "Address"},
		{"bad node meta key", func(r *catalog.RegisterRequest) { r.NodeMeta = map[string]string{"a.b": "v"} }, "NodeMeta[a.b]"},
		{"bad tagged address tag", func(r *catalog.RegisterRequest) { r.TaggedAddresses = map[string]string{"a.b": "10.0.0.1"} }, "TaggedAddresses[a.b]"},
		{"empty tagged address", func(r *catalog.RegisterRequest) { r.TaggedAddresses = map[string]string{"wan": ""} }, "TaggedAddresses[wan]"},
		{"bad service tagged address", func(r *catalog.RegisterRequest) {
			r.Service.TaggedAddresses = map[string]catalog.ServiceAddress{"wan": {Address: "x", Port: -1}}
		}, "Service.TaggedAddresses[wan].Port"},
		{"service without name", func(r *catalog.RegisterRequest) { r.Service.Service = "" }, "Service.Name"},
		{"bad service name", func(r *catalog.RegisterRequest) { r.Service.Service = "web api" }, "Service.Name"},
		{"bad service ID", func(r *catalog.RegisterRequest) { r.Service.ID = "a#b" }, "Service.ID"},
		{"bad service tag", func(r *catalog.RegisterRequest) { r.Service.Tags = []string{"v1", "-x"} }, "Service.Tags[1]"},
		{"bad service port", func(r *catalog.RegisterRequest) { r.Service.Port = 70000 }, "Service.Port"},
		{"bad service meta", func(r *catalog.RegisterRequest) { r.Service.Meta = map[string]string{"k": strings.Repeat("v", 513)} }, "Service.Meta[k]"},
		{"bad service weights", func(r *catalog.RegisterRequest) { r.Service.Weights = catalog.Weights{Warning: 2} }, "Service.Weights.Passing"},
		{"check without ID", func(r *catalog.RegisterRequest) { r.Checks[0].CheckID = "" }, "Checks[0].CheckID"},
		{"check ID with percent", func(r *catalog.RegisterRequest) { r.Checks[1].CheckID = "a%20b" }, "Checks[1].CheckID"},
		{"check without status", func(r *catalog.RegisterRequest) { r.Checks[1].Status = "" }, "Checks[1].Status"},
		{"check with unknown status", func(r *catalog.RegisterRequest) { r.Checks[0].Status = "ok" }, "Checks[0].Status"},
		{"check with status in upper case", func(r *catalog.RegisterRequest) { r.Checks[0].Status = "PASSING" }, "Checks[0].Status"},
		{"check type in upper case", func(r *catalog.RegisterRequest) { r.Checks[1].Type = "HTTP" }, "Checks[1].Type"},
		{"check type with a space", func(r *catalog.RegisterRequest) { r.Checks[0].Type = "my check" }, "Checks[0].Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodReq()
			tt.change(r)
			err := catalog.ValidateRegister(r)
			if err == nil {
				t.Fatalf("ValidateRegister: got nil error, want one for %s", tt.wantField)
			}
			if got := fieldOf(t, err); got != tt.wantField {
				t.Errorf("Field: got %q, want %q (error %v)", got, tt.wantField, err)
			}
		})
	}
}

func TestValidateRegisterAccepts(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*catalog.RegisterRequest)
		wantSvc *catalog.Service
	}{
		{"full request", func(*catalog.RegisterRequest) {},
			&catalog.Service{ID: "web", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights}},
		{"node only", func(r *catalog.RegisterRequest) { r.Service, r.Checks, r.NodeMeta = nil, nil, nil }, nil},
		{"SkipNodeUpdate without address", func(r *catalog.RegisterRequest) { r.Address = ""; r.SkipNodeUpdate = true },
			&catalog.Service{ID: "web", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights}},
		{"IPv6 node address", func(r *catalog.RegisterRequest) { r.Address = "2001:db8::2" },
			&catalog.Service{ID: "web", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights}},
		{"mixed-case node name", func(r *catalog.RegisterRequest) { r.Node = "Node-1" },
			&catalog.Service{ID: "web", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights}},
		{"every check status", func(r *catalog.RegisterRequest) {
			r.Checks = nil
			for _, st := range []catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical, catalog.HealthMaintenance} {
				r.Checks = append(r.Checks, &catalog.Check{CheckID: string(st), Status: st})
			}
		}, &catalog.Service{ID: "web", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodReq()
			tt.change(r)
			if err := catalog.ValidateRegister(r); err != nil {
				t.Fatalf("ValidateRegister: got %v, want nil", err)
			}
			if !reflect.DeepEqual(r.Service, tt.wantSvc) {
				t.Errorf("normalised service: got %+v, want %+v", r.Service, tt.wantSvc)
			}
		})
	}
}

func TestValidLabel(t *testing.T) {
	tests := []struct {
		in   string
		want bool // valid
	}{
		{"a", true},
		{"web", true},
		{"Web-1", true},
		{"1", true},
		{"123-abc", true},
		{"a--b", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{"-a", false},
		{"a-", false},
		{"-", false},
		{"a_b", false},
		{"a.b", false},
		{"a b", false},
		{" a", false},
		{"a/b", false},
		{"café", false},
		{"a\x00", false},
		{strings.Repeat("a", 64), false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			reason := catalog.ValidLabel(tt.in)
			if got := reason == ""; got != tt.want {
				t.Errorf("ValidLabel(%q): got valid=%v (reason %q), want valid=%v", tt.in, got, reason, tt.want)
			}
		})
	}
}

func TestValidateNodeName(t *testing.T) {
	if err := catalog.ValidateNodeName("Node", "node-1"); err != nil {
		t.Errorf("ValidateNodeName(node-1): got %v, want nil", err)
	}
	err := catalog.ValidateNodeName("Nodes[2]", "node.1")
	if err == nil {
		t.Fatal("ValidateNodeName(node.1): got nil, want an error")
	}
	if got := fieldOf(t, err); got != "Nodes[2]" {
		t.Errorf("Field: got %q, want %q", got, "Nodes[2]")
	}
}

func TestValidateID(t *testing.T) {
	tests := []struct {
		in   string
		want bool // valid
	}{
		{"web", true},
		{"web-1", true},
		{"web:1", true},
		{"a~b!c@d$e&f*(g)+h=i,j;k", true},
		{"UPPER.lower_1", true},
		{strings.Repeat("i", 128), true},
		{"", false},
		{"a/b", false},
		{"a?b", false},
		{"a#b", false},
		{"a%b", false},
		{"a b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"\x7f", false},
		{"é", false},
		{strings.Repeat("i", 129), false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			err := catalog.ValidateID("Service.ID", tt.in)
			if got := err == nil; got != tt.want {
				t.Fatalf("ValidateID(%q): got valid=%v (error %v), want valid=%v", tt.in, got, err, tt.want)
			}
			if err != nil {
				if got := fieldOf(t, err); got != "Service.ID" {
					t.Errorf("Field: got %q, want %q", got, "Service.ID")
				}
			}
		})
	}
}

func TestValidateMeta(t *testing.T) {
	tests := []struct {
		name      string
		meta      map[string]string
		wantField string // "" when valid
	}{
		{"nil", nil, ""},
		{"empty", map[string]string{}, ""},
		{"simple", map[string]string{"k": "v"}, ""},
		{"key with _ and -, empty value", map[string]string{"a_B-9": ""}, ""},
		{"value with any characters", map[string]string{"k": "a b/c?d=é"}, ""},
		{"64 pairs", manyMeta(64), ""},
		{"longest key", map[string]string{strings.Repeat("k", 128): "v"}, ""},
		{"longest value", map[string]string{"k": strings.Repeat("v", 512)}, ""},
		{"65 pairs", manyMeta(65), "Meta"},
		{"empty key", map[string]string{"": "v"}, "Meta[]"},
		{"key with dot", map[string]string{"a.b": "v"}, "Meta[a.b]"},
		{"key with space", map[string]string{"a b": "v"}, "Meta[a b]"},
		{"key with slash", map[string]string{"a/b": "v"}, "Meta[a/b]"},
		{"key too long", map[string]string{strings.Repeat("k", 129): "v"}, "Meta[" + strings.Repeat("k", 129) + "]"},
		{"value too long", map[string]string{"k": strings.Repeat("v", 513)}, "Meta[k]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catalog.ValidateMeta("Meta", tt.meta)
			if tt.wantField == "" {
				if err != nil {
					t.Errorf("ValidateMeta: got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateMeta: got nil, want an error for %s", tt.wantField)
			}
			if got := fieldOf(t, err); got != tt.wantField {
				t.Errorf("Field: got %q, want %q", got, tt.wantField)
			}
		})
	}
}

func TestValidateCheckType(t *testing.T) {
	tests := []struct {
		in     string
		wantOK bool
	}{
		{"", true},
		{"http", true},
		{"grpc", true},
		{"maintenance", true},
		{"h2c", true},
		{"x-custom", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"HTTP", false},
		{"Http", false},
		{"1http", false},
		{"-http", false},
		{"http-", false},
		{"http check", false},
		{"http_check", false},
		{"http.v2", false},
		{"ttl\n", false},
	}
	for _, tt := range tests {
		err := catalog.ValidateCheckType("Type", tt.in)
		if tt.wantOK {
			if err != nil {
				t.Errorf("ValidateCheckType(%q): got %v, want nil", tt.in, err)
			}
			continue
		}
		if got := fieldOf(t, err); got != "Type" {
			t.Errorf("ValidateCheckType(%q): got field %q, want Type", tt.in, got)
		}
	}
}

func TestValidateHealthState(t *testing.T) {
	for _, ok := range []string{"passing", "warning", "critical", "maintenance", "any"} {
		if err := catalog.ValidateHealthState("State", ok); err != nil {
			t.Errorf("ValidateHealthState(%q): got %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "Passing", "ANY", "all", "unknown"} {
		if got := fieldOf(t, catalog.ValidateHealthState("State", bad)); got != "State" {
			t.Errorf("ValidateHealthState(%q): got field %q, want State", bad, got)
		}
	}
}

func TestHealthStatusValid(t *testing.T) {
	tests := []struct {
		in   catalog.HealthStatus
		want bool
	}{
		{catalog.HealthPassing, true},
		{catalog.HealthWarning, true},
		{catalog.HealthCritical, true},
		{catalog.HealthMaintenance, true},
		{"", false},
		{"Passing", false},
		{"ok", false},
		{catalog.HealthAny, false}, // a query's wildcard, not a state
	}
	for _, tt := range tests {
		if got := tt.in.Valid(); got != tt.want {
			t.Errorf("HealthStatus(%q).Valid(): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestServiceAddressMustBeIP: a service's address is an IPv4 or IPv6
// address, stored in its canonical form; anything else is refused naming
// Address.
func TestServiceAddressMustBeIP(t *testing.T) {
	tests := []struct {
		in, want string // want "": refused
	}{
		{"10.0.0.1", "10.0.0.1"},
		{"::1", "::1"},
		{"2001:DB8:0::1", "2001:db8::1"},
		{"localhost", ""},
		{"10.0.0.1:80", ""},
		{"[::1]", ""},
		{"10.0.0.256", ""},
		{"10.0.0", ""},
	}
	for _, tt := range tests {
		svc := catalog.Service{Service: "web", Address: tt.in}
		err := catalog.NormalizeService(&svc)
		switch {
		case tt.want == "":
			if got := fieldOf(t, err); got != "Address" {
				t.Errorf("NormalizeService(Address %q): Field %q, want Address", tt.in, got)
			}
		case err != nil:
			t.Errorf("NormalizeService(Address %q): got error %v, want none", tt.in, err)
		case svc.Address != tt.want:
			t.Errorf("NormalizeService(Address %q): got %q, want %q", tt.in, svc.Address, tt.want)
		}
	}
}

func TestValidationRejectsZonedAddress(t *testing.T) {
	// A zoned address ("fe80::1%eth0") cannot be put in a DNS record, so
	// it is refused rather than accepted and never answered.
	svc := catalog.Service{Service: "web", Address: "fe80::1%eth0"}
	if got := fieldOf(t, catalog.NormalizeService(&svc)); got != "Address" {
		t.Errorf("NormalizeService Field: got %q, want %q", got, "Address")
	}
	r := goodReq()
	r.Address = "fe80::2%eth0"
	if got := fieldOf(t, catalog.ValidateRegister(r)); got != "Address" {
		t.Errorf("ValidateRegister Field: got %q, want %q", got, "Address")
	}
}
