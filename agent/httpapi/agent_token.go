package httpapi

import (
	"errors"
	"net/http"

	"github.com/cairndns/cairn/agent/tokens"
	"github.com/cairndns/cairn/rpc"
)

// AgentTokens are the agent's own ACL tokens (package agent/tokens
// satisfies it).
type AgentTokens interface {
	// Set sets the token of kind (default, agent, agent_recovery,
	// replication, config_file_service_registration, dns, or an older
	// name Consul takes); an unknown kind is an error wrapping
	// tokens.ErrUnknownKind (answered 404), and a token that could not be
	// persisted changes nothing.
	Set(kind, secret string) error
}

// agentTokenBody is the body of PUT /v1/agent/token/<kind> (Consul's
// AgentToken).
type agentTokenBody struct {
	Token string
}

// agentToken answers PUT /v1/agent/token/<kind> (acl:write, as Consul's):
// the agent uses the token from now on (its default token for requests
// without one, its own writes with the agent token, DNS with the dns
// token). Consul checks nothing of the token itself, nor does cairn.
func (s *Server) agentToken(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Authorizer == nil {
		return rpc.ErrACLDisabled
	}
	if s.deps.Tokens == nil {
		return notFound("the agent's tokens cannot be set on this agent")
	}
	var body agentTokenBody
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	kind := r.PathValue("kind")
	if err := s.deps.Tokens.Set(kind, body.Token); err != nil {
		if errors.Is(err, tokens.ErrUnknownKind) {
			return notFound("Token %q is unknown", kind)
		}
		return err
	}
	s.logger.Info("agent token updated", "kind", kind)
	w.WriteHeader(http.StatusOK)
	return nil
}
