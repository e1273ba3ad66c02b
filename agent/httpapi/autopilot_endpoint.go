package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// autopilotConfig is the body of GET and PUT
// /v1/operator/autopilot/configuration, Consul's AutopilotConfiguration.
// Durations are strings ("200ms"); a PUT may send them as numbers of
// nanoseconds too, as Consul's ReadableDuration allows. The three
// Enterprise fields are accepted and ignored, as Consul's community
// edition does, so Consul's clients can send what they read.
type autopilotConfig struct {
	CleanupDeadServers      bool
	LastContactThreshold    string
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime string
	RedundancyZoneTag       string
	DisableUpgradeMigration bool
	UpgradeVersionTag       string
	CreateIndex             uint64
	ModifyIndex             uint64
}

// autopilotConfigBody is autopilotConfig as a PUT sends it.
type autopilotConfigBody struct {
	CleanupDeadServers      bool
	LastContactThreshold    duration
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime duration
	RedundancyZoneTag       string
	DisableUpgradeMigration bool
	UpgradeVersionTag       string
	CreateIndex             uint64
	ModifyIndex             uint64
}

// serverHealth is one server in GET /v1/operator/autopilot/health,
// Consul's ServerHealth.
type serverHealth struct {
	ID          string
	Name        string
	Address     string
	SerfStatus  string
	Version     string
	Leader      bool
	LastContact string // "12ms"; "-1ns" when unknown, as Consul's
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	Voter       bool
	StableSince time.Time
	// StorageError is cairn's: why the server cannot write its Raft
	// storage (a full disk), left out when it can.
	StorageError string `json:",omitempty"`
	// ClockSkew is cairn's: how far the server's wall clock is ahead of
	// the leader's ("-5.002s": behind), left out when never measured.
	ClockSkew string `json:",omitempty"`
}

// operatorHealth is the body of GET /v1/operator/autopilot/health,
// Consul's OperatorHealthReply.
type operatorHealth struct {
	Healthy          bool
	FailureTolerance int
	Servers          []serverHealth
}

// autopilotServer is one server in GET /v1/operator/autopilot/state, a
// simplified Consul AutopilotServer (no redundancy zones, no upgrades,
// no read replicas).
type autopilotServer struct {
	ID          string
	Name        string
	Address     string
	NodeStatus  string
	Version     string
	LastContact string
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	StableSince time.Time
	ReadReplica bool
	Status      string // "leader", "voter" or "non-voter"
	Meta        map[string]string
	NodeType    string // "voter": every server may vote
	// ClockSkew is cairn's, as serverHealth's.
	ClockSkew string `json:",omitempty"`
}

// autopilotState is the body of GET /v1/operator/autopilot/state, a
// simplified Consul AutopilotState.
type autopilotState struct {
	Healthy          bool
	FailureTolerance int
	// OptimisticFailureTolerance is the failure tolerance the servers
	// would have if every healthy non-voter were a voter.
	OptimisticFailureTolerance int
	Servers                    map[string]autopilotServer
	Leader                     string
	Voters                     []string
}

// operatorAutopilot serves /v1/operator/autopilot/{configuration,health,
// state} as Consul does: GET and PUT (?cas=) the configuration, GET the
// servers' health (429 while any server is unhealthy, so a load balancer
// can use it) and autopilot's state. ?dc= names another datacenter; ?stale
// lets any server answer a configuration read.
func (s *Server) operatorAutopilot(w http.ResponseWriter, r *http.Request) error {
	what, dc := r.PathValue("what"), r.URL.Query().Get("dc")
	allow := http.MethodGet
	switch what {
	case "configuration":
		allow = http.MethodGet + ", " + http.MethodPut
	case "health", "state":
	default:
		return notFound("no endpoint %s", r.URL.Path)
	}
	if r.Method != http.MethodGet && (what != "configuration" || r.Method != http.MethodPut) {
		w.Header().Set("Allow", allow)
		return &httpError{code: http.StatusMethodNotAllowed, body: errorBody{Error: "method " + r.Method + " not allowed; use " + allow}}
	}
	switch {
	case what == "configuration" && r.Method == http.MethodPut:
		return s.setAutopilotConfig(w, r, dc)
	case what == "configuration":
		// The leader's, or with ?stale any server's.
		args := &rpc.AutopilotGetConfigRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: boolParam(r, "stale")}}
		var reply rpc.AutopilotConfigResponse
		if err := s.door.RPC(r.Context(), rpc.MethodOperatorAutopilotGetConfiguration, args, &reply); err != nil {
			return fmt.Errorf("read autopilot configuration: %w", err)
		}
		cfg := reply.Config
		w.Header().Set("X-Consul-Index", strconv.FormatUint(max(cfg.ModifyIndex, 1), 10))
		writeJSONPretty(w, r, autopilotConfig{
			CleanupDeadServers: cfg.CleanupDeadServers, LastContactThreshold: cfg.LastContactThreshold.String(),
			MaxTrailingLogs: cfg.MaxTrailingLogs, MinQuorum: cfg.MinQuorum,
			ServerStabilizationTime: cfg.ServerStabilizationTime.String(),
			CreateIndex:             cfg.CreateIndex, ModifyIndex: cfg.ModifyIndex,
		})
		return nil
	}
	health, err := s.serverHealth(r.Context(), dc)
	if err != nil {
		return err
	}
	if what == "state" {
		writeJSONPretty(w, r, toAutopilotState(health))
		return nil
	}
	out := operatorHealth{Healthy: health.Healthy, FailureTolerance: health.FailureTolerance, Servers: make([]serverHealth, 0, len(health.Servers))}
	for _, h := range health.Servers {
		out.Servers = append(out.Servers, serverHealth{
			ID: h.ID, Name: h.Name, Address: h.Address, SerfStatus: h.SerfStatus, Version: h.Version,
			Leader: h.Leader, LastContact: lastContact(h.LastContact), LastTerm: h.LastTerm, LastIndex: h.LastIndex,
			Healthy: h.Healthy, Voter: h.Voter, StableSince: h.StableSince, StorageError: h.StorageError,
			ClockSkew: clockSkew(h.ClockSkew, h.ClockSkewKnown),
		})
	}
	code := http.StatusOK
	if !out.Healthy {
		code = http.StatusTooManyRequests
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	if _, ok := r.URL.Query()["pretty"]; ok {
		enc.SetIndent("", "    ")
	}
	_ = enc.Encode(out)
	return nil
}

// setAutopilotConfig serves PUT /v1/operator/autopilot/configuration: the
// body replaces the configuration; with ?cas=<index> only when its
// ModifyIndex is still index. It answers true or false, as Consul's.
// A bad value is a *catalog.FieldError from the servers.
func (s *Server) setAutopilotConfig(w http.ResponseWriter, r *http.Request, dc string) error {
	var body autopilotConfigBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	cfg := rpc.AutopilotConfig{CleanupDeadServers: body.CleanupDeadServers, MaxTrailingLogs: body.MaxTrailingLogs, MinQuorum: body.MinQuorum}
	var err error
	if cfg.LastContactThreshold, err = body.LastContactThreshold.parse("LastContactThreshold"); err != nil {
		return err
	}
	if cfg.ServerStabilizationTime, err = body.ServerStabilizationTime.parse("ServerStabilizationTime"); err != nil {
		return err
	}
	cas := false
	if v, ok := r.URL.Query()["cas"]; ok {
		idx, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return badRequest("cas", "must be a non-negative integer index, got %q", v[0])
		}
		cas, cfg.ModifyIndex = true, idx
	}
	args := &rpc.AutopilotSetConfigRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Config: cfg, CAS: cas}
	var reply rpc.AutopilotSetConfigResponse
	if err := s.door.RPC(r.Context(), rpc.MethodOperatorAutopilotSetConfiguration, args, &reply); err != nil {
		return fmt.Errorf("set autopilot configuration: %w", err)
	}
	writeJSONPretty(w, r, !cas || reply.Updated)
	return nil
}

// serverHealth returns the health of the servers of dc ("" for the
// agent's) as its leader judges it.
func (s *Server) serverHealth(ctx context.Context, dc string) (*rpc.ServerHealthResponse, error) {
	args := &rpc.ServerHealthRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc}}
	var reply rpc.ServerHealthResponse
	if err := s.door.RPC(ctx, rpc.MethodOperatorServerHealth, args, &reply); err != nil {
		return nil, fmt.Errorf("read server health: %w", err)
	}
	return &reply, nil
}

// toAutopilotState shapes the servers' health as autopilot's state.
func toAutopilotState(h *rpc.ServerHealthResponse) autopilotState {
	out := autopilotState{
		Healthy: h.Healthy, FailureTolerance: h.FailureTolerance,
		Servers: make(map[string]autopilotServer, len(h.Servers)), Voters: []string{},
	}
	voters, healthyVoters, healthyNonVoters := 0, 0, 0
	for _, s := range h.Servers {
		status := "non-voter"
		switch {
		case s.Leader:
			status = "leader"
			out.Leader = s.ID
		case s.Voter:
			status = "voter"
		}
		switch {
		case s.Voter:
			voters++
			out.Voters = append(out.Voters, s.ID)
			if s.Healthy {
				healthyVoters++
			}
		case s.Healthy:
			healthyNonVoters++
		}
		out.Servers[s.ID] = autopilotServer{
			ID: s.ID, Name: s.Name, Address: s.Address, NodeStatus: s.SerfStatus, Version: s.Version,
			LastContact: lastContact(s.LastContact), LastTerm: s.LastTerm, LastIndex: s.LastIndex,
			Healthy: s.Healthy, StableSince: s.StableSince, Status: status, Meta: map[string]string{}, NodeType: "voter",
			ClockSkew: clockSkew(s.ClockSkew, s.ClockSkewKnown),
		}
	}
	// Were every healthy non-voter a voter: the healthy ones beyond a
	// majority of them all.
	total := voters + healthyNonVoters
	out.OptimisticFailureTolerance = max(0, healthyVoters+healthyNonVoters-(total/2+1))
	return out
}

// lastContact formats a last contact as Consul does (a Go duration), to
// the millisecond; an unknown one (negative) stays "-1ns".
func lastContact(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return d.Round(time.Millisecond).String()
}

// clockSkew formats a measured clock skew as a Go duration to the
// millisecond (a measurement is good to half a round trip), "" when
// unknown.
func clockSkew(d time.Duration, known bool) string {
	if !known {
		return ""
	}
	return d.Round(time.Millisecond).String()
}
