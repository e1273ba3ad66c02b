package httpapi

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"time"
)

// Bounds of a ?hash= wait on one agent service, as Consul's blocking
// queries have them.
const (
	defaultHashWait = 5 * time.Minute
	maxHashWait     = 10 * time.Minute
)

// agentServiceGet answers GET /v1/agent/service/<id>: one of the agent's
// own services with its ContentHash (also in X-Consul-ContentHash), 404
// when it holds none with that ID. With ?hash=<the hash last read> it
// blocks until the service changes or ?wait ends, as Consul's hash-based
// blocking query does.
func (s *Server) agentServiceGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if id == "" {
		return badRequest("ID", "is required in the path: /v1/agent/service/<id>")
	}
	wait := defaultHashWait
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return err
		}
		wait = min(max(d, time.Millisecond), maxHashWait)
	}
	last := r.URL.Query().Get("hash")
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		// Taken before the read, so that a change between the two is not
		// missed.
		changed := s.local.ServicesChanged()
		out, err := s.readAgentService(r, id)
		if err != nil {
			return err
		}
		if last == "" || out.ContentHash != last {
			w.Header().Set("X-Consul-ContentHash", out.ContentHash)
			writeJSONPretty(w, r, out)
			return nil
		}
		select {
		case <-changed:
		case <-timeout.C:
			last = "" // answer as it is
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
}

func (s *Server) readAgentService(r *http.Request, id string) (*agentService, error) {
	services, err := s.readableServices(r)
	if err != nil {
		return nil, err
	}
	for _, svc := range services {
		if svc.ID == id {
			out := s.toAgentService(svc)
			out.ContentHash, err = contentHash(out)
			return out, err
		}
	}
	return nil, notFound("unknown service ID %q", id)
}

// contentHash is a hash of what a service's registration says (not where
// it is read: the datacenter is left out), for ?hash= waits. It is
// cairn's own hash: a client compares it, never computes it.
func contentHash(svc *agentService) (string, error) {
	cp := *svc
	cp.ContentHash, cp.Datacenter = "", ""
	b, err := json.Marshal(&cp)
	if err != nil {
		return "", fmt.Errorf("hash service %q: %w", svc.ID, err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64()), nil
}
