package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/hashicorp/hcl"
)

// readServiceFile reads one service definition from a JSON file (name ending
// in .json) or an HCL file (anything else). Both shapes are accepted: the
// bare registration ({"Name": "web", "Port": 8080}) and Consul's wrapper
// ({"service": {"name": "web", "port": 8080}}); keys match in any case.
func readServiceFile(path string) (*api.AgentServiceRegistration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read service file: %w", err)
	}
	reg, err := parseServiceFile(path, data)
	if err != nil {
		return nil, fmt.Errorf("service file %s: %w", path, err)
	}
	return reg, nil
}

// knownServiceKeys are the keys of a service definition, lowercased, with
// the keys each object-valued key allows (nil for any key, as in meta).
func knownServiceKeys() map[string]map[string]bool {
	return map[string]map[string]bool{
		"id": nil, "name": nil, "tags": nil, "port": nil, "address": nil, "meta": nil,
		"weights": {"passing": true, "warning": true},
		// The keys of checks are checked by normalizeChecks.
		"check": nil, "checks": nil,
	}
}

// checkKeys maps the keys of a check in a file, lowercased and without
// underscores (so Consul's "tls_skip_verify" and "TLSSkipVerify" alike),
// to the field of api.AgentServiceCheck they set.
var checkKeys = map[string]string{
	"id": "CheckID", "checkid": "CheckID", "name": "Name", "notes": "Notes", "status": "Status",
	"http": "HTTP", "method": "Method", "header": "Header", "body": "Body",
	"tlsskipverify": "TLSSkipVerify", "tlsservername": "TLSServerName",
	"tcp": "TCP", "udp": "UDP", "grpc": "GRPC", "grpcusetls": "GRPCUseTLS", "ttl": "TTL",
	"args": "Args", "scriptargs": "Args", "aliasservice": "AliasService", "aliasnode": "AliasNode",
	"interval": "Interval", "timeout": "Timeout",
	"successbeforepassing": "SuccessBeforePassing", "failuresbeforewarning": "FailuresBeforeWarning",
	"failuresbeforecritical": "FailuresBeforeCritical", "outputmaxsize": "OutputMaxSize",
	"deregistercriticalserviceafter": "DeregisterCriticalServiceAfter",
}

// normalizeChecks rewrites the check and checks of a service object with
// the field names of api.AgentServiceCheck, rejecting keys it does not
// know. An HCL file's single block in "checks" becomes a list of one.
func normalizeChecks(svc map[string]any) error {
	for k, v := range svc {
		switch strings.ToLower(k) {
		case "check":
			obj, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("%q must hold one check object (use \"checks\" for several)", k)
			}
			chk, err := normalizeCheck(obj, k)
			if err != nil {
				return err
			}
			svc[k] = chk
		case "checks":
			var list []any
			switch t := v.(type) {
			case map[string]any:
				list = []any{t}
			case []any:
				list = t
			default:
				return fmt.Errorf("%q must hold a list of check objects", k)
			}
			out := make([]any, len(list))
			for i, item := range list {
				obj, ok := item.(map[string]any)
				if !ok {
					return fmt.Errorf("%s[%d] must be a check object", k, i)
				}
				chk, err := normalizeCheck(obj, fmt.Sprintf("%s[%d]", k, i))
				if err != nil {
					return err
				}
				out[i] = chk
			}
			svc[k] = out
		}
	}
	return nil
}

// normalizeCheck returns obj with its keys renamed after checkKeys; where
// names it in errors.
func normalizeCheck(obj map[string]any, where string) (map[string]any, error) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(obj))
	given := map[string]string{} // field → the key that set it
	for _, k := range keys {
		field, ok := checkKeys[strings.ReplaceAll(strings.ToLower(k), "_", "")]
		if !ok {
			return nil, fmt.Errorf("unknown key %q in %q", k, where)
		}
		if prev, dup := given[field]; dup {
			return nil, fmt.Errorf("keys %q and %q in %q both set %s", prev, k, where, field)
		}
		given[field] = k
		out[field] = obj[k]
	}
	return out, nil
}

func parseServiceFile(path string, data []byte) (*api.AgentServiceRegistration, error) {
	var raw map[string]any
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("parse JSON: %w", err)
		}
	} else if err := hcl.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse HCL: %w", err)
	}
	svc, err := unwrapService(raw)
	if err != nil {
		return nil, err
	}
	if err := checkServiceKeys(svc); err != nil {
		return nil, err
	}
	if err := normalizeChecks(svc); err != nil {
		return nil, err
	}
	// encoding/json matches keys to fields in any case, so one round trip
	// turns {"name": …} and {"Name": …} alike into the registration.
	b, err := json.Marshal(svc)
	if err != nil {
		return nil, err
	}
	var reg api.AgentServiceRegistration
	if err := json.Unmarshal(b, &reg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: got a %s, want %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
		}
		return nil, err
	}
	if reg.Name == "" {
		return nil, errors.New(`missing key "name"`)
	}
	return &reg, nil
}

// jsonKind names a Go kind the way a person writing the file thinks of it.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "a number"
	case kind == "slice":
		return "a list"
	case kind == "map" || kind == "struct" || kind == "ptr":
		return "an object"
	}
	return "a " + kind
}

// unwrapService returns the service object of a file: the value of its
// "service" key when that is the only key, the whole file otherwise.
// HCL blocks decode as lists of objects; single ones are unwrapped here.
func unwrapService(raw map[string]any) (map[string]any, error) {
	raw = flattenBlocks(raw).(map[string]any)
	if len(raw) == 0 {
		return nil, errors.New("holds no service")
	}
	for k, v := range raw {
		switch strings.ToLower(k) {
		case "services":
			return nil, errors.New(`holds a "services" list: cairn registers one service per file, under "service"`)
		case "service":
			if len(raw) != 1 {
				return nil, fmt.Errorf("holds %q and other keys: put every key inside %q", k, k)
			}
			svc, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%q must hold exactly one service object", k)
			}
			return svc, nil
		}
	}
	return raw, nil
}

// flattenBlocks replaces every one-element list of objects (how HCL decodes
// a block such as meta { … }) by the object, recursively.
func flattenBlocks(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			t[k] = flattenBlocks(sub)
		}
		return t
	case []map[string]any:
		if len(t) == 1 {
			return flattenBlocks(t[0])
		}
		out := make([]any, len(t))
		for i, m := range t {
			out[i] = flattenBlocks(m)
		}
		return out
	case []any:
		if len(t) == 1 {
			if m, ok := t[0].(map[string]any); ok {
				return flattenBlocks(m)
			}
		}
		for i, sub := range t {
			t[i] = flattenBlocks(sub)
		}
		return t
	}
	return v
}

// checkServiceKeys rejects keys cairn does not know (and so would ignore)
// and keys given twice in different case.
func checkServiceKeys(svc map[string]any) error {
	known := knownServiceKeys()
	seen := map[string]string{}
	keys := make([]string, 0, len(svc))
	for k := range svc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lk := strings.ToLower(k)
		sub, ok := known[lk]
		if !ok {
			return fmt.Errorf("unknown key %q (a service has id, name, tags, port, address, meta, weights, check, checks)", k)
		}
		if prev, dup := seen[lk]; dup {
			return fmt.Errorf("key %q given twice (also as %q)", k, prev)
		}
		seen[lk] = k
		obj, isObj := svc[k].(map[string]any)
		if sub == nil || !isObj {
			continue
		}
		for sk := range obj {
			if !sub[strings.ToLower(sk)] {
				return fmt.Errorf("unknown key %q in %q", sk, k)
			}
		}
	}
	return nil
}
