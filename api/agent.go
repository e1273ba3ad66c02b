package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Agent is the group of /v1/agent endpoints: the services of the agent the
// client talks to.
type Agent struct{ c *Client }

// ServiceRegister registers (or replaces) a service on the local agent:
// PUT /v1/agent/service/register. The agent validates it; a rejected field
// comes back as a *StatusError with Field and Reason set.
func (a *Agent) ServiceRegister(ctx context.Context, reg *AgentServiceRegistration) error {
	if reg == nil {
		return errors.New("register service: registration is nil")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/service/register",
		body:   reg,
	}, nil)
	return err
}

// ServiceDeregister removes the service with the given ID from the local
// agent: PUT /v1/agent/service/deregister/<id>.
func (a *Agent) ServiceDeregister(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("deregister service: service ID is empty")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/service/deregister/" + url.PathEscape(id),
	}, nil)
	return err
}

// Services lists the services registered on the local agent, keyed by
// service ID: GET /v1/agent/services.
func (a *Agent) Services(ctx context.Context) (map[string]*AgentService, error) {
	var out map[string]*AgentService
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/services"}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]*AgentService{}
	}
	return out, nil
}
