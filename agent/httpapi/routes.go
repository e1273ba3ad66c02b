package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
)

// handlerFunc is an endpoint: it writes a success itself and returns any
// error for writeError to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// Methods, for the tables below.
const (
	get  = http.MethodGet
	head = http.MethodHead
	put  = http.MethodPut
	post = http.MethodPost
	del  = http.MethodDelete
)

// route is one entry of the route table: a pattern, its handler, and
// what each method it answers needs (need.go). A route is registered
// only with its Needs: the table is the one place both the mux and the
// attacker test's list (testdata/routes.json) are built from.
type route struct {
	pattern string
	h       handlerFunc
	needs   Needs
}

// methods are the route's methods, sorted.
func (rt route) methods() []string {
	return slices.Sorted(maps.Keys(rt.needs))
}

// kvPattern is the key store's route, which the mux never sees (routes).
const kvPattern = "/v1/kv/{key...}"

// table is every route the API serves. s may be a zero Server: nothing
// here is called.
func (s *Server) table() []route {
	return []route{
		{"/v1/agent/service/register", s.agentServiceRegister, Needs{put: inRequest("service", "write")}},
		{"/v1/agent/service/deregister/{id...}", s.agentServiceDeregister, Needs{put: inRequest("service", "write")}},
		{"/v1/agent/services", s.agentServices, Needs{get: filtered("service")}},
		{"/v1/agent/service/{id}", s.agentServiceGet, Needs{get: inRequest("service", "read")}},
		{"/v1/agent/self", s.agentSelf, Needs{get: onNode("agent", "read")}},
		{"/v1/agent/service/maintenance/{id...}", s.agentServiceMaintenance, Needs{put: inRequest("service", "write")}},
		{"/v1/agent/maintenance", s.agentNodeMaintenance, Needs{put: onNode("node", "write")}},
		{"/v1/agent/check/register", s.agentCheckRegister, Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/check/deregister/{id...}", s.agentCheckDeregister, Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/check/pass/{id...}", s.agentCheckTTL("pass", catalog.HealthPassing), Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/check/warn/{id...}", s.agentCheckTTL("warn", catalog.HealthWarning), Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/check/fail/{id...}", s.agentCheckTTL("fail", catalog.HealthCritical), Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/check/update/{id...}", s.agentCheckUpdate, Needs{put: inRequest("service,node", "write")}},
		{"/v1/agent/checks", s.agentChecks, Needs{get: filtered("service,node")}},
		{"/v1/agent/members", s.agentMembers, Needs{get: filtered("node")}},
		{"/v1/agent/join/{address...}", s.agentJoin, Needs{put: onNode("agent", "write")}},
		{"/v1/agent/leave", s.agentLeave, Needs{put: onNode("agent", "write")}},   // and operator:write, checked by the handler
		{"/v1/agent/reload", s.agentReload, Needs{put: onNode("agent", "write")}}, // agent_self.go
		{"/v1/agent/metrics", s.agentMetrics, Needs{get: onNode("agent", "read")}},
		{"/v1/agent/monitor", s.agentMonitor, Needs{get: onNode("agent", "read")}},                                   // monitor_endpoint.go
		{"/debug/pprof/{name...}", s.debugPprof, Needs{get: top("operator", "read"), post: top("operator", "read")}}, // debug_endpoint.go

		// force-leave: cluster_endpoints.go; health and host: agent_health.go;
		// events: event_endpoints.go.
		{"/v1/agent/force-leave/{node}", s.agentForceLeave, Needs{put: top("operator", "write")}},
		{"/v1/agent/health/service/id/{id}", s.agentHealthServiceByID, Needs{get: inRequest("service", "read")}},
		{"/v1/agent/health/service/name/{name}", s.agentHealthServiceByName, Needs{get: onPath("service", "read", "name")}},
		{"/v1/agent/host", s.agentHost, Needs{get: top("operator", "read")}},
		{"/v1/event/fire/{name}", s.eventFire, Needs{put: onPath("event", "write", "name")}},
		{"/v1/event/list", s.eventList, Needs{get: filtered("event")}},
		{"/v1/agent/token/{kind}", s.agentToken, Needs{put: top("acl", "write")}}, // agent_token.go

		{"/v1/catalog/services", s.catalogServices, Needs{get: filtered("service")}},
		{"/v1/catalog/service/{name}", s.catalogService, Needs{get: filtered("service,node")}},
		{"/v1/catalog/nodes", s.catalogNodes, Needs{get: filtered("node")}},
		{"/v1/catalog/node/{node}", s.catalogNodeGet, Needs{get: filtered("node,service")}},
		{"/v1/catalog/node-services/{node}", s.catalogNodeServices, Needs{get: filtered("node,service")}},
		{"/v1/catalog/register", s.catalogRegister, Needs{put: inRequest("service,node", "write")}},
		{"/v1/catalog/deregister", s.catalogDeregister, Needs{put: inRequest("service,node", "write")}},
		{"/v1/catalog/datacenters", s.catalogDatacenters, Needs{get: public()}},
		{"/v1/health/service/{name}", s.healthService, Needs{get: filtered("service,node")}},
		{"/v1/health/checks/{service}", s.healthChecks, Needs{get: filtered("service,node")}},
		{"/v1/health/node/{node}", s.healthNode, Needs{get: filtered("node,service")}},
		{"/v1/health/state/{state}", s.healthState, Needs{get: filtered("service,node")}},
		{"/v1/query", s.queryCollection, Needs{get: filtered("query"), post: inRequest("query", "write")}},
		{"/v1/query/{id}", s.queryItem, Needs{get: inRequest("query", "read"), put: inRequest("query", "write"), del: inRequest("query", "write")}},
		// Executing by ID needs no query rule (Consul's); the answer
		// holds only the instances the token may read.
		{"/v1/query/{id}/execute", s.queryExecute, Needs{get: filtered("service,node")}},
		{"/v1/txn", s.txn, Needs{put: inRequest("key,session", "read")}},                          // txn_endpoints.go: each operation checked by the servers
		{"/v1/session/create", s.sessionCreate, Needs{put: inRequest("session", "write")}},        // session_endpoints.go
		{"/v1/session/destroy/{id}", s.sessionDestroy, Needs{put: inRequest("session", "write")}}, // the session's node, looked up by the servers
		{"/v1/session/renew/{id}", s.sessionRenew, Needs{put: inRequest("session", "write")}},
		{"/v1/session/info/{id}", s.sessionInfo, Needs{get: filtered("session")}},
		{"/v1/session/node/{node}", s.sessionList, Needs{get: filtered("session")}},
		{"/v1/session/list", s.sessionList, Needs{get: filtered("session")}},
		{"/v1/coordinate/datacenters", s.coordinateDatacenters, Needs{get: public()}}, // coordinate_endpoints.go
		{"/v1/coordinate/nodes", s.coordinateNodes, Needs{get: filtered("node")}},
		{"/v1/coordinate/node/{node}", s.coordinateNode, Needs{get: filtered("node")}},
		{"/v1/coordinate/update", s.coordinateUpdate, Needs{put: inRequest("node", "write")}},
		{"/v1/status/leader", s.statusLeader, Needs{get: public()}},
		{"/v1/status/peers", s.statusPeers, Needs{get: public()}},
		{"/v1/operator/raft/configuration", s.operatorRaftConfiguration, Needs{get: top("operator", "read")}},
		{"/v1/operator/raft/peer", s.operatorRaftPeer, Needs{del: top("operator", "write")}},
		{"/v1/operator/raft/transfer-leader", s.operatorRaftTransferLeader, Needs{post: top("operator", "write")}},
		{"/v1/snapshot", s.snapshot, Needs{get: management(), put: management()}},                                                  // snapshot_endpoint.go
		{"/v1/operator/autopilot/{what}", s.operatorAutopilot, Needs{get: top("operator", "read"), put: top("operator", "write")}}, // autopilot_endpoint.go
		{"/v1/operator/keyring", s.operatorKeyring, Needs{ // keyring_endpoint.go
			get: top("keyring", "read"), post: top("keyring", "write"), put: top("keyring", "write"), del: top("keyring", "write")}},
		{"/v1/acl/bootstrap", s.aclBootstrap, Needs{put: public()}}, // acl_endpoints.go: once, to anyone (the servers' rule)
		{"/v1/acl/policy", s.aclPolicyCreate, Needs{put: top("acl", "write")}},
		{"/v1/acl/policy/name/{name}", s.aclPolicyByName, Needs{get: top("acl", "read")}},
		{"/v1/acl/policy/{id}", s.aclPolicyItem, Needs{get: top("acl", "read"), put: top("acl", "write"), del: top("acl", "write")}},
		{"/v1/acl/policies", s.aclPolicies, Needs{get: top("acl", "read")}},
		{"/v1/acl/token", s.aclTokenCreate, Needs{put: top("acl", "write")}},
		// GET answers acl:read, or any token its own ("self"): the
		// servers decide.
		{"/v1/acl/token/{id}", s.aclTokenItem, Needs{get: filtered("acl"), put: top("acl", "write"), del: top("acl", "write")}},
		{"/v1/acl/tokens", s.aclTokens, Needs{get: top("acl", "read")}},
		{"/v1/acl/token/{id}/clone", s.aclTokenClone, Needs{put: top("acl", "write")}}, // acl_roles.go
		{"/v1/acl/role", s.aclRoleCreate, Needs{put: top("acl", "write")}},
		{"/v1/acl/role/name/{name}", s.aclRoleByName, Needs{get: top("acl", "read")}},
		{"/v1/acl/role/{id}", s.aclRoleItem, Needs{get: top("acl", "read"), put: top("acl", "write"), del: top("acl", "write")}},
		{"/v1/acl/roles", s.aclRoles, Needs{get: top("acl", "read")}},
		{"/v1/acl/auth-methods", s.aclAuthMethods, Needs{get: top("acl", "read")}},
		{"/v1/acl/replication", s.aclReplication, Needs{get: public()}}, // how replication goes, to anyone, as Consul
		{"/ui/", s.ui, Needs{get: public(), head: public()}},            // ui_endpoint.go: the web UI
		{"/{$}", s.uiRoot, Needs{get: public(), head: public()}},
		// ui_dns.go and doh.go: what the DNS port tells anyone, with the
		// agent's default token.
		{"/v1/internal/ui/dns", s.uiDNS, Needs{get: public()}},
		{"/dns-query", s.dnsQuery, Needs{get: public(), post: public()}},
		{kvPattern, s.kv, Needs{get: filtered("key"), put: onPath("key", "write", "key"), del: onPath("key", "write", "key")}}, // kv_endpoints.go
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	var kv http.HandlerFunc
	for _, rt := range s.table() {
		if rt.pattern == kvPattern {
			kv = s.endpoint(rt)
			continue
		}
		mux.HandleFunc(rt.pattern, s.endpoint(rt))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no endpoint %s", r.URL.Path))
	})
	// A key is whatever follows /v1/kv/, "a//b" and "a/./b" included:
	// the mux would answer those with a redirect to the cleaned path,
	// which clients follow as a GET (a PUT's value lost) or to another
	// key. So the key store's paths never reach the mux.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := strings.CutPrefix(r.URL.Path, "/v1/kv/"); ok {
			r.SetPathValue("key", key)
			kv(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// endpoint is the handler of rt: the method check, the request's token,
// the check of what the method needs (its body closed until then), the
// ?filter, then the handler. Any other method gets a 405 with an Allow
// header and a JSON body, like every other error.
func (s *Server) endpoint(rt route) http.HandlerFunc {
	for m, need := range rt.needs {
		if err := need.valid(); err != nil {
			panic(fmt.Sprintf("httpapi: route %s %s: bad Need: %v", m, rt.pattern, err))
		}
	}
	allow := strings.Join(rt.methods(), ", ")
	return s.httpMetrics.instrument(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
		need, ok := rt.needs[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method " + r.Method + " not allowed; use " + allow})
			return
		}
		// The request's token rides in its context to whatever sends
		// the request on to the servers (acl.TokenFromContext).
		r = r.WithContext(acl.ContextWithToken(r.Context(), requestToken(r)))
		if r.Body == nil {
			r.Body = http.NoBody
		}
		body := &gatedBody{rc: r.Body, open: need.BodyFirst}
		r.Body = body
		err := s.admit(r, need)
		if err == nil {
			body.open = true
			r, err = withFilter(rt.pattern, r) // filter.go: a bad ?filter is refused before any read
		}
		if err == nil {
			err = rt.h(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}
