package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

func TestServicesFromFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []ServiceDefinition
	}{
		{"json object", `{"service":{"name":"redis", "port":1234, "Meta": {"some": "meta"}}}`,
			[]ServiceDefinition{{Service: catalog.Service{Service: "redis", Port: 1234, Meta: map[string]string{"some": "meta"}}}}},
		{"json ports", `{"service":{"name":"redis", "ports": [{ "name": "http", "port": 8080, "default": true }, { "name": "metrics", "port": 9090 }]}}`,
			[]ServiceDefinition{{Service: catalog.Service{Service: "redis", Ports: []catalog.ServicePort{{Name: "http", Port: 8080, Default: true}, {Name: "metrics", Port: 9090}}}}}},
		{"json services", `{"services":[{"name":"a","EnableTagOverride":true,"check":{"ttl":"10s"}},{"id":"b1","name":"b","locality":{"region":"r","zone":"z"},"tagged_addresses":{"lan":{"address":"10.0.0.1","port":80},"wan":{"address":"192.0.2.1","port":8080}},"checks":[{"id":"c1","tcp":"127.0.0.1:1","interval":"5s","deregister_critical_service_after":"1m"}]}]}`,
			[]ServiceDefinition{
				{Service: catalog.Service{Service: "a", EnableTagOverride: true}, Checks: []*checks.Definition{{TTL: 10 * time.Second}}},
				{Service: catalog.Service{ID: "b1", Service: "b", Locality: &catalog.Locality{Region: "r", Zone: "z"},
					TaggedAddresses: map[string]catalog.ServiceAddress{"lan": {Address: "10.0.0.1", Port: 80}, "wan": {Address: "192.0.2.1", Port: 8080}}},
					Checks: []*checks.Definition{{ID: "c1", TCP: "127.0.0.1:1", Interval: 5 * time.Second, DeregisterCriticalServiceAfter: time.Minute}}},
			}},
		{"hcl blocks", "service {\n name = \"a\"\n port = 1\n}\nservice {\n name = \"b\"\n tags = [\"x\"]\n socket_path = \"/s\"\n}\n",
			[]ServiceDefinition{{Service: catalog.Service{Service: "a", Port: 1}}, {Service: catalog.Service{Service: "b", Tags: []string{"x"}, SocketPath: "/s"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := ".json"
			if tc.name == "hcl blocks" {
				ext = ".hcl"
			}
			path := filepath.Join(t.TempDir(), "c"+ext)
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Default()
			if err := LoadFile(path, &c); err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if !reflect.DeepEqual(c.Services, tc.want) {
				t.Errorf("got %+v, want %+v", c.Services, tc.want)
			}
		})
	}
}
