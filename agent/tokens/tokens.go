// Package tokens holds the ACL tokens an agent uses for itself (Consul's
// acl.tokens: default, agent, agent_recovery, replication,
// config_file_service_registration, dns): set from the configuration at
// start, changed at runtime through PUT /v1/agent/token/<kind>, and with
// acl.enable_token_persistence kept in the data dir (acl-tokens.json,
// Consul's file) so that a restart keeps what was set at runtime. Its
// methods may be called from any goroutine.
package tokens

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// The kinds of token, as Consul names them in the path and the file.
const (
	Default       = "default"
	Agent         = "agent"
	AgentRecovery = "agent_recovery"
	Replication   = "replication"
	ConfigFile    = "config_file_service_registration"
	DNS           = "dns"
)

// aliases are the kinds' older names Consul still takes.
var aliases = map[string]string{
	"acl_token": Default, "acl_agent_token": Agent, "agent_master": AgentRecovery,
	"acl_agent_master_token": AgentRecovery, "acl_replication_token": Replication,
}

// ErrUnknownKind is returned by Set for a kind that is not one of the
// above.
var ErrUnknownKind = errors.New("unknown token kind")

// Kind returns the kind name stands for (its older names included), and
// whether it is one.
func Kind(name string) (string, bool) {
	if k, ok := aliases[name]; ok {
		return k, true
	}
	switch name {
	case Default, Agent, AgentRecovery, Replication, ConfigFile, DNS:
		return name, true
	}
	return "", false
}

// FileName is the file in the data dir that persisted tokens live in.
const FileName = "acl-tokens.json"

// Store is an agent's tokens.
type Store struct {
	path string // "" without persistence

	mu     sync.RWMutex
	tokens map[string]string // by kind
	set    map[string]bool   // the kinds set at runtime: those persisted
}

// New returns the store of the configured tokens (by kind). With a path
// (persistence on), the tokens persisted there replace the configured
// ones, as Consul's do.
func New(configured map[string]string, path string) (*Store, error) {
	s := &Store{path: path, tokens: map[string]string{}, set: map[string]bool{}}
	for k, v := range configured {
		if _, ok := Kind(k); !ok {
			return nil, fmt.Errorf("tokens: %q: %w", k, ErrUnknownKind)
		}
		s.tokens[k] = v
	}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokens: read persisted tokens: %w", err)
	}
	var saved map[string]string
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("tokens: %s: %w", path, err)
	}
	for k, v := range saved {
		if kind, ok := Kind(k); ok {
			s.tokens[kind], s.set[kind] = v, true
		}
	}
	return s, nil
}

// Get returns the token of kind ("" for none).
func (s *Store) Get(kind string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tokens[kind]
}

// Func returns a function reading the current token of kind, for those
// who read it at each use.
func (s *Store) Func(kind string) func() string { return func() string { return s.Get(kind) } }

// AgentToken is the token the agent writes its own node and services
// with: agent, else default.
func (s *Store) AgentToken() string {
	if t := s.Get(Agent); t != "" {
		return t
	}
	return s.Get(Default)
}

// DNSToken is the token the agent answers DNS with: dns, else default.
func (s *Store) DNSToken() string {
	if t := s.Get(DNS); t != "" {
		return t
	}
	return s.Get(Default)
}

// Set sets the token of kind (or one of its older names) and, with
// persistence, writes the tokens set at runtime to the file before it
// returns; a failed write changes nothing.
func (s *Store) Set(name, secret string) error {
	kind, ok := Kind(name)
	if !ok {
		return fmt.Errorf("token %q: %w", name, ErrUnknownKind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path != "" {
		saved := map[string]string{kind: secret}
		for k := range s.set {
			if k != kind {
				saved[k] = s.tokens[k]
			}
		}
		if err := writeFile(s.path, saved); err != nil {
			return err
		}
	}
	s.tokens[kind], s.set[kind] = secret, true
	return nil
}

// writeFile replaces path with tokens, readable by the agent's user only.
func writeFile(path string, tokens map[string]string) error {
	b, err := json.Marshal(tokens)
	if err != nil {
		return fmt.Errorf("tokens: encode: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".acl-tokens-*")
	if err != nil {
		return fmt.Errorf("tokens: persist: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("tokens: persist: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("tokens: persist: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tokens: persist: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tokens: persist: %w", err)
	}
	return nil
}
