package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/cairndns/cairn/catalog"
)

// agentCheck is one of the agent's checks as GET /v1/agent/checks lists it
// (Consul's AgentCheck).
type agentCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
	Type        string
}

// ttlUpdate is the body of PUT /v1/agent/check/update/<id>.
type ttlUpdate struct {
	Status string
	Output string
}

func (s *Server) agentCheckRegister(w http.ResponseWriter, r *http.Request) error {
	var body checkBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	def, err := body.definition("")
	if err != nil {
		return err
	}
	idField, fromName := "ID", false
	switch {
	case body.ID == "" && body.CheckID != "":
		idField = "CheckID"
	case def.ID == "" && def.Name != "":
		// As in Consul, a check registered without an ID is known by its
		// name.
		def.ID, fromName = def.Name, true
	}
	if err := def.Validate("", s.cfg.EnableScriptChecks); err != nil {
		return err
	}
	if err := catalog.ValidateID(idField, def.ID); err != nil {
		var fe *catalog.FieldError
		if fromName && errors.As(err, &fe) {
			return badRequest("ID", "is required: the Name %q cannot serve as the ID (%s)", def.Name, fe.Reason)
		}
		return err
	}
	if err := s.mayWriteCheckDef(r, def.ServiceID); err != nil {
		return err
	}
	// A check of that ID replaced must be the token's to change too.
	if err := s.mayWriteCheck(r, def.ID); err != nil {
		return err
	}
	if err := s.local.AddCheck(r.Context(), def); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// checkID reads the check ID at the end of the path of the endpoint named
// by path ("/v1/agent/check/deregister").
func checkID(r *http.Request, path string) (string, error) {
	id := r.PathValue("id")
	if id == "" {
		return "", badRequest("CheckID", "is required in the path: %s/<check-id>", path)
	}
	return id, nil
}

func (s *Server) agentCheckDeregister(w http.ResponseWriter, r *http.Request) error {
	id, err := checkID(r, "/v1/agent/check/deregister")
	if err != nil {
		return err
	}
	if err := s.mayWriteCheck(r, id); err != nil {
		return err
	}
	if err := s.local.RemoveCheck(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// agentCheckTTL returns the handler of /v1/agent/check/<verb>/<id>?note=,
// which reports status for a TTL check with the note as its output.
func (s *Server) agentCheckTTL(verb string, status catalog.HealthStatus) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := checkID(r, "/v1/agent/check/"+verb)
		if err != nil {
			return err
		}
		if err := s.mayWriteCheck(r, id); err != nil {
			return err
		}
		if err := s.local.UpdateTTL(id, status, r.URL.Query().Get("note")); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
}

func (s *Server) agentCheckUpdate(w http.ResponseWriter, r *http.Request) error {
	id, err := checkID(r, "/v1/agent/check/update")
	if err != nil {
		return err
	}
	if err := s.mayWriteCheck(r, id); err != nil {
		return err
	}
	var body ttlUpdate
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	switch st := catalog.HealthStatus(body.Status); st {
	case catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical:
		if err := s.local.UpdateTTL(id, st, body.Output); err != nil {
			return err
		}
	case "":
		return badRequest("Status", "is required: passing, warning or critical")
	default:
		return badRequest("Status", "must be passing, warning or critical, got %q", body.Status)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) agentChecks(w http.ResponseWriter, r *http.Request) error {
	tags := make(map[string][]string)
	for _, svc := range s.local.Services() {
		tags[svc.ID] = svc.Tags
	}
	checks, err := s.readableChecks(r)
	if err != nil {
		return err
	}
	list := make([]*agentCheck, 0, len(checks))
	for _, c := range checks {
		ac := &agentCheck{
			Node: c.Node, CheckID: c.CheckID, Name: c.Name, Status: string(c.Status),
			Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID, ServiceName: c.ServiceName,
			ServiceTags: []string{}, Type: c.Type,
		}
		if c.ServiceID != "" {
			ac.ServiceTags = nonNil(tags[c.ServiceID])
		}
		list = append(list, ac)
	}
	if list, err = applyFilter(r, list); err != nil {
		return err
	}
	out := make(map[string]*agentCheck, len(list))
	for _, ac := range list {
		out[ac.CheckID] = ac
	}
	writeJSONPretty(w, r, out)
	return nil
}

// enableParam reads the required ?enable=true|false of the maintenance
// endpoints.
func enableParam(r *http.Request) (bool, error) {
	vals, ok := r.URL.Query()["enable"]
	if !ok || len(vals) == 0 || vals[0] == "" {
		return false, badRequest("enable", "is required: ?enable=true to enter maintenance, ?enable=false to leave it")
	}
	b, err := strconv.ParseBool(vals[0])
	if err != nil {
		return false, badRequest("enable", "must be true or false, got %q", vals[0])
	}
	return b, nil
}

func (s *Server) agentServiceMaintenance(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if id == "" {
		return badRequest("ServiceID", "is required in the path: /v1/agent/service/maintenance/<service-id>")
	}
	enable, err := enableParam(r)
	if err != nil {
		return err
	}
	if err := s.mayWriteService(r, id); err != nil {
		return err
	}
	if err := s.local.SetServiceMaintenance(r.Context(), id, enable, r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) agentNodeMaintenance(w http.ResponseWriter, r *http.Request) error {
	enable, err := enableParam(r)
	if err != nil {
		return err
	}
	if err := s.local.SetNodeMaintenance(r.Context(), enable, r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
