package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cairndns/cairn/zones"
)

// FuzzAgentServiceRegister sends arbitrary bodies to the register endpoint,
// checks included. Whatever it gets, the API must answer 200 or 400 with a
// JSON error, never panic or fail otherwise; and every service it accepts must be answerable
// in DNS: its name and each tag parse back as the name of that service.
func FuzzAgentServiceRegister(f *testing.F) {
	for _, seed := range []string{
		`{"Name":"web","Port":8080,"Tags":["v1"]}`,
		`{"ID":"web-1","Name":"web","Address":"10.0.0.1","Meta":{"k":"v"},"Weights":{"Passing":3,"Warning":1}}`,
		`{"name":"Web-2","port":1,"tags":["A","b-c"]}`,
		`{"Name":"x","Address":"::1"}`,
		`{"Name":"bad_name"}`,
		`{"Name":"web","Port":70000}`,
		`{"Name":"web","Check":{"TTL":"10s","Status":"passing"}}`,
		`{"Name":"web","Checks":[{"TTL":"1m"},{"CheckID":"c","TTL":60000000000}]}`,
		`{"Name":"web","Check":{"HTTP":"http://x","Interval":"10 s"}}`,
		`{"Name":"web","Checks":[null]}`,
		`[1,2]`, `{"Name":`, ``,
	} {
		f.Add(seed)
	}
	zone, err := zones.New(zones.DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		st, _ := realLocal(t)
		h := newServer(t, st, nil)
		rec := serve(h, http.MethodPut, "/v1/agent/service/register", body)
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest:
			if !strings.Contains(rec.Body.String(), `"field"`) {
				t.Fatalf("400 without a field: %s", rec.Body)
			}
			return
		default:
			t.Fatalf("got status %d (%s) for body %q, want 200 or 400", rec.Code, rec.Body, body)
		}
		for _, svc := range st.Services() {
			name := strings.ToLower(svc.Service)
			q := zone.Parse(name + ".service.cluster.")
			if q.Kind != zones.KindService || q.Name != name {
				t.Fatalf("accepted service %q parses as %+v, want service %q", svc.Service, q, name)
			}
			for _, tag := range svc.Tags {
				tag = strings.ToLower(tag)
				q := zone.Parse(tag + "." + name + ".service.cluster.")
				if q.Kind != zones.KindService || q.Tag != tag || q.Name != name {
					t.Fatalf("accepted tag %q of %q parses as %+v", tag, name, q)
				}
			}
		}
	})
}
