package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	jsonparser "github.com/hashicorp/hcl/json/parser"
)

// fileConfig mirrors Config with the keys users write in a config file. HCL
// and JSON share the keys (HCL's decoder reads both). Pointers tell a key
// that is absent from one set to its zero value.
type fileConfig struct {
	NodeName      *string    `hcl:"node_name"`
	Datacenter    *string    `hcl:"datacenter"`
	Domain        *string    `hcl:"domain"`
	BindAddr      *string    `hcl:"bind_addr"`
	AdvertiseAddr *string    `hcl:"advertise_addr"`
	ClientAddr    *string    `hcl:"client_addr"`
	DataDir       *string    `hcl:"data_dir"`
	Server        *bool      `hcl:"server"`
	LogLevel      *string    `hcl:"log_level"`
	Ports         *filePorts `hcl:"ports"`
}

type filePorts struct {
	DNS    *int `hcl:"dns"`
	HTTP   *int `hcl:"http"`
	Server *int `hcl:"server"`
}

var knownKeys = map[string]bool{
	"node_name": true, "datacenter": true, "domain": true, "bind_addr": true,
	"advertise_addr": true, "client_addr": true, "data_dir": true, "server": true,
	"log_level": true, "ports": true, "ports.dns": true, "ports.http": true, "ports.server": true,
}

// LoadConfigFile reads an HCL or JSON file (by extension: .json is JSON,
// anything else HCL) and applies every key it sets onto c. Unknown keys are
// an error naming the key, so a typo is not silently ignored.
func LoadConfigFile(path string, c *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	return applyConfigFile(path, data, c)
}

func applyConfigFile(path string, data []byte, c *Config) error {
	tree, err := parseConfig(path, data)
	if err != nil {
		return fmt.Errorf("parse config file %s: %w", path, err)
	}
	var raw map[string]any
	if err := hcl.DecodeObject(&raw, tree); err != nil {
		return fmt.Errorf("decode config file %s: %w", path, err)
	}
	if err := checkKeys("", raw); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	var fc fileConfig
	if err := hcl.DecodeObject(&fc, tree); err != nil {
		return fmt.Errorf("decode config file %s: %w", path, err)
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.NodeName, fc.NodeName)
	set(&c.Datacenter, fc.Datacenter)
	set(&c.Domain, fc.Domain)
	set(&c.BindAddr, fc.BindAddr)
	set(&c.AdvertiseAddr, fc.AdvertiseAddr)
	set(&c.ClientAddr, fc.ClientAddr)
	set(&c.DataDir, fc.DataDir)
	set(&c.LogLevel, fc.LogLevel)
	if fc.Server != nil {
		c.Server = *fc.Server
	}
	if fc.Ports != nil {
		if fc.Ports.DNS != nil {
			c.Ports.DNS = *fc.Ports.DNS
		}
		if fc.Ports.HTTP != nil {
			c.Ports.HTTP = *fc.Ports.HTTP
		}
		if fc.Ports.Server != nil {
			c.Ports.Server = *fc.Ports.Server
		}
	}
	return nil
}

// parseConfig parses data as JSON when path ends in .json, else as HCL.
// hcl's JSON parser forgives truncated and malformed documents, so JSON is
// checked with encoding/json first.
func parseConfig(path string, data []byte) (*ast.File, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		return jsonparser.Parse(data)
	}
	return hclparser.Parse(data)
}

// checkKeys rejects keys the agent does not know. HCL decodes a block as a
// list of maps, so both shapes are walked.
func checkKeys(prefix string, v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			key := prefix + k
			if !knownKeys[key] {
				return &FieldError{Field: key, Reason: "unknown key"}
			}
			if list, ok := sub.([]map[string]any); ok && len(list) > 1 {
				return &FieldError{Field: key, Reason: "given more than once; write one block"}
			}
			if err := checkKeys(key+".", sub); err != nil {
				return err
			}
		}
	case []map[string]any:
		for _, m := range t {
			if err := checkKeys(prefix, m); err != nil {
				return err
			}
		}
	case []any:
		for _, m := range t {
			if err := checkKeys(prefix, m); err != nil {
				return err
			}
		}
	}
	return nil
}
