package httpapi_test

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
)

type fakeDNS struct{ asked [][2]string }

func (f *fakeDNS) AskDNS(name, qtype string) (httpapi.DNSReply, error) {
	f.asked = append(f.asked, [2]string{name, qtype})
	if qtype == "BAD" {
		return httpapi.DNSReply{}, errors.New("unknown query type \"BAD\"")
	}
	return httpapi.DNSReply{Rcode: "NOERROR", Answer: []string{name + "\t0\tIN\tA\t10.0.0.1"}}, nil
}

func TestUIDNS(t *testing.T) {
	off := newAPI(t, httpapi.DefaultConfig(), httpapi.Deps{})
	if rec := serve(off.Handler(), http.MethodGet, "http://127.0.0.1:8500/v1/internal/ui/dns?name=web.service.cluster", ""); rec.Code != http.StatusNotFound {
		t.Errorf("without Deps.AskDNS: got %d, want 404", rec.Code)
	}
	dns := &fakeDNS{}
	s := newAPI(t, httpapi.DefaultConfig(), httpapi.Deps{AskDNS: dns.AskDNS})
	rec := serve(s.Handler(), http.MethodGet, "http://127.0.0.1:8500/v1/internal/ui/dns?name=web.service.cluster", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string]any](t, rec)
	want := map[string]any{"Name": "web.service.cluster", "Type": "A", "Rcode": "NOERROR",
		"Answer": []any{"web.service.cluster\t0\tIN\tA\t10.0.0.1"}, "Extra": []any{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, target := range []string{"/v1/internal/ui/dns", "/v1/internal/ui/dns?name=x&type=BAD"} {
		rec := serve(s.Handler(), http.MethodGet, "http://127.0.0.1:8500"+target, "")
		if rec.Code != http.StatusBadRequest || errorBody(t, rec)["field"] != "name" {
			t.Errorf("%s: got %d %s, want 400 naming name", target, rec.Code, rec.Body)
		}
	}
}
