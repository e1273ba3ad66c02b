package httpapi

import (
	"net/http"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
)

// handlerFunc is an endpoint: it writes a success itself and returns any
// error for writeError to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.handle(mux, "/v1/agent/service/register", s.agentServiceRegister, http.MethodPut)
	s.handle(mux, "/v1/agent/service/deregister/{id...}", s.agentServiceDeregister, http.MethodPut)
	s.handle(mux, "/v1/agent/services", s.agentServices, http.MethodGet)
	s.handle(mux, "/v1/agent/service/{id}", s.agentServiceGet, http.MethodGet)
	s.handle(mux, "/v1/agent/self", s.agentSelf, http.MethodGet)
	s.handle(mux, "/v1/agent/service/maintenance/{id...}", s.agentServiceMaintenance, http.MethodPut)
	s.handle(mux, "/v1/agent/maintenance", s.agentNodeMaintenance, http.MethodPut)
	s.handle(mux, "/v1/agent/check/register", s.agentCheckRegister, http.MethodPut)
	s.handle(mux, "/v1/agent/check/deregister/{id...}", s.agentCheckDeregister, http.MethodPut)
	s.handle(mux, "/v1/agent/check/pass/{id...}", s.agentCheckTTL("pass", catalog.HealthPassing), http.MethodPut)
	s.handle(mux, "/v1/agent/check/warn/{id...}", s.agentCheckTTL("warn", catalog.HealthWarning), http.MethodPut)
	s.handle(mux, "/v1/agent/check/fail/{id...}", s.agentCheckTTL("fail", catalog.HealthCritical), http.MethodPut)
	s.handle(mux, "/v1/agent/check/update/{id...}", s.agentCheckUpdate, http.MethodPut)
	s.handle(mux, "/v1/agent/checks", s.agentChecks, http.MethodGet)
	s.handle(mux, "/v1/agent/members", s.agentMembers, http.MethodGet)
	s.handle(mux, "/v1/agent/join/{address...}", s.agentJoin, http.MethodPut)
	s.handle(mux, "/v1/agent/leave", s.agentLeave, http.MethodPut)
	s.handle(mux, "/v1/agent/reload", s.agentReload, http.MethodPut) // agent_self.go
	s.handle(mux, "/v1/agent/metrics", s.agentMetrics, http.MethodGet)
	s.handle(mux, "/v1/agent/monitor", s.agentMonitor, http.MethodGet)                     // monitor_endpoint.go
	s.handle(mux, "/debug/pprof/{name...}", s.debugPprof, http.MethodGet, http.MethodPost) // debug_endpoint.go
	s.handle(mux, "/v1/catalog/services", s.catalogServices, http.MethodGet)
	s.handle(mux, "/v1/catalog/service/{name}", s.catalogService, http.MethodGet)
	s.handle(mux, "/v1/catalog/nodes", s.catalogNodes, http.MethodGet)
	s.handle(mux, "/v1/catalog/node/{node}", s.catalogNodeGet, http.MethodGet)
	s.handle(mux, "/v1/catalog/node-services/{node}", s.catalogNodeServices, http.MethodGet)
	s.handle(mux, "/v1/catalog/register", s.catalogRegister, http.MethodPut)
	s.handle(mux, "/v1/catalog/deregister", s.catalogDeregister, http.MethodPut)
	s.handle(mux, "/v1/catalog/datacenters", s.catalogDatacenters, http.MethodGet)
	s.handle(mux, "/v1/health/service/{name}", s.healthService, http.MethodGet)
	s.handle(mux, "/v1/health/checks/{service}", s.healthChecks, http.MethodGet)
	s.handle(mux, "/v1/health/node/{node}", s.healthNode, http.MethodGet)
	s.handle(mux, "/v1/health/state/{state}", s.healthState, http.MethodGet)
	s.handle(mux, "/v1/query", s.queryCollection, http.MethodGet, http.MethodPost)
	s.handle(mux, "/v1/query/{id}", s.queryItem, http.MethodGet, http.MethodPut, http.MethodDelete)
	s.handle(mux, "/v1/query/{id}/execute", s.queryExecute, http.MethodGet)
	s.handle(mux, "/v1/txn", s.txn, http.MethodPut)                      // txn_endpoints.go
	s.handle(mux, "/v1/session/create", s.sessionCreate, http.MethodPut) // session_endpoints.go
	s.handle(mux, "/v1/session/destroy/{id}", s.sessionDestroy, http.MethodPut)
	s.handle(mux, "/v1/session/renew/{id}", s.sessionRenew, http.MethodPut)
	s.handle(mux, "/v1/session/info/{id}", s.sessionInfo, http.MethodGet)
	s.handle(mux, "/v1/session/node/{node}", s.sessionList, http.MethodGet)
	s.handle(mux, "/v1/session/list", s.sessionList, http.MethodGet)
	s.handle(mux, "/v1/coordinate/datacenters", s.coordinateDatacenters, http.MethodGet) // coordinate_endpoints.go
	s.handle(mux, "/v1/coordinate/nodes", s.coordinateNodes, http.MethodGet)
	s.handle(mux, "/v1/coordinate/node/{node}", s.coordinateNode, http.MethodGet)
	s.handle(mux, "/v1/coordinate/update", s.coordinateUpdate, http.MethodPut)
	s.handle(mux, "/v1/status/leader", s.statusLeader, http.MethodGet)
	s.handle(mux, "/v1/status/peers", s.statusPeers, http.MethodGet)
	s.handle(mux, "/v1/operator/raft/configuration", s.operatorRaftConfiguration, http.MethodGet)
	s.handle(mux, "/v1/snapshot", s.snapshot, http.MethodGet, http.MethodPut)                                                    // snapshot_endpoint.go
	s.handle(mux, "/v1/operator/autopilot/{what}", s.operatorAutopilot, http.MethodGet, http.MethodPut)                          // autopilot_endpoint.go
	s.handle(mux, "/v1/operator/keyring", s.operatorKeyring, http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete) // keyring_endpoint.go
	s.handle(mux, "/v1/acl/bootstrap", s.aclBootstrap, http.MethodPut)                                                           // acl_endpoints.go
	s.handle(mux, "/v1/acl/policy", s.aclPolicyCreate, http.MethodPut)
	s.handle(mux, "/v1/acl/policy/name/{name}", s.aclPolicyByName, http.MethodGet)
	s.handle(mux, "/v1/acl/policy/{id}", s.aclPolicyItem, http.MethodGet, http.MethodPut, http.MethodDelete)
	s.handle(mux, "/v1/acl/policies", s.aclPolicies, http.MethodGet)
	s.handle(mux, "/v1/acl/token", s.aclTokenCreate, http.MethodPut)
	s.handle(mux, "/v1/acl/token/{id}", s.aclTokenItem, http.MethodGet, http.MethodPut, http.MethodDelete)
	s.handle(mux, "/v1/acl/tokens", s.aclTokens, http.MethodGet)
	s.routeUI(mux)                                                // ui_endpoint.go: the web UI under /ui/, and GET / redirected there
	s.handle(mux, "/v1/internal/ui/dns", s.uiDNS, http.MethodGet) // ui_dns.go
	s.routeDoH(mux)                                               // doh.go: DNS over HTTPS, on the HTTPS listener only
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no endpoint %s", r.URL.Path))
	})
	// A key is whatever follows /v1/kv/, "a//b" and "a/./b" included:
	// the mux would answer those with a redirect to the cleaned path,
	// which clients follow as a GET (a PUT's value lost) or to another
	// key. So the key store's paths never reach the mux.
	kv := s.endpoint("/v1/kv/{key...}", s.kv, http.MethodGet, http.MethodPut, http.MethodDelete) // kv_endpoints.go
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := strings.CutPrefix(r.URL.Path, "/v1/kv/"); ok {
			r.SetPathValue("key", key)
			kv(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// handle registers an endpoint for the given methods; any other method gets
// a 405 with an Allow header and a JSON body, like every other error.
func (s *Server) handle(mux *http.ServeMux, pattern string, h handlerFunc, methods ...string) {
	mux.HandleFunc(pattern, s.endpoint(pattern, h, methods...))
}

// endpoint is the handler handle registers for pattern: the method check,
// the request's token and ?filter, then h.
func (s *Server) endpoint(pattern string, h handlerFunc, methods ...string) http.HandlerFunc {
	allow := strings.Join(methods, ", ")
	return s.httpMetrics.instrument(pattern, func(w http.ResponseWriter, r *http.Request) {
		ok := false
		for _, m := range methods {
			ok = ok || r.Method == m
		}
		if !ok {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method " + r.Method + " not allowed; use " + allow})
			return
		}
		// The request's token rides in its context to whatever sends
		// the request on to the servers (acl.TokenFromContext).
		r = r.WithContext(acl.ContextWithToken(r.Context(), requestToken(r)))
		r, err := withFilter(pattern, r) // filter.go: a bad ?filter is refused before any read
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}
