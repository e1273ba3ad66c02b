package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	jsonparser "github.com/hashicorp/hcl/json/parser"
)

// fileConfig lists the keys users write in a config file. HCL
// and JSON share the keys (HCL's decoder reads both). Pointers tell a key
// that is absent from one set to its zero value.
type fileConfig struct {
	NodeName      *string           `hcl:"node_name"`
	NodeID        *string           `hcl:"node_id"`
	Datacenter    *string           `hcl:"datacenter"`
	PrimaryDC     *string           `hcl:"primary_datacenter"`
	Domain        *string           `hcl:"domain"`
	BindAddr      *string           `hcl:"bind_addr"`
	AdvertiseAddr *string           `hcl:"advertise_addr"`
	AdvertiseWAN  *string           `hcl:"advertise_addr_wan"`
	ClientAddr    *string           `hcl:"client_addr"`
	DataDir       *string           `hcl:"data_dir"`
	Server        *bool             `hcl:"server"`
	LogLevel      *string           `hcl:"log_level"`
	Ports         *filePorts        `hcl:"ports"`
	AltDomain     *string           `hcl:"alt_domain"`
	Recursors     []string          `hcl:"recursors"`
	DNS           *fileDNS          `hcl:"dns_config"`
	NodeMeta      map[string]string `hcl:"node_meta"`

	BootstrapExpect  *int     `hcl:"bootstrap_expect"`
	RetryJoin        []string `hcl:"retry_join"`
	RetryJoinWAN     []string `hcl:"retry_join_wan"`
	RetryInterval    *string  `hcl:"retry_interval"`
	RetryMax         *int     `hcl:"retry_max"`
	Encrypt          *string  `hcl:"encrypt"`
	ReconnectTimeout *string  `hcl:"reconnect_timeout"`

	EnableScriptChecks  *bool   `hcl:"enable_script_checks"`
	EnableDebug         *bool   `hcl:"enable_debug"`
	CheckUpdateInterval *string `hcl:"check_update_interval"`
	AEInterval          *string `hcl:"ae_interval"`

	ACL        *fileACL        `hcl:"acl"`
	Limits     *fileLimits     `hcl:"limits"`
	Telemetry  *fileTelemetry  `hcl:"telemetry"` // telemetry.go
	HTTPConfig *fileHTTPConfig `hcl:"http_config"`
	TLS        *fileTLS        `hcl:"tls"`

	fileServerKeys     `hcl:",squash"` // server.go
	fileCoordinateKeys `hcl:",squash"` // coordinates.go
	fileGossipKeys     `hcl:",squash"` // gossip.go
	fileServiceKeys    `hcl:",squash"` // services.go
	fileAddressKeys    `hcl:",squash"` // addresses.go
	fileLogKeys        `hcl:",squash"` // logging.go
}

// fileDNS is the dns_config block. Durations are strings ("5s").
type fileDNS struct {
	NodeTTL                     *string           `hcl:"node_ttl"`
	PTRTTL                      *string           `hcl:"ptr_ttl"`
	ServiceTTL                  map[string]string `hcl:"service_ttl"`
	OnlyPassing                 *bool             `hcl:"only_passing"`
	UDPAnswerLimit              *int              `hcl:"udp_answer_limit"`
	ARecordLimit                *int              `hcl:"a_record_limit"`
	MaxUDPSize                  *int              `hcl:"max_udp_size"`
	UDPSockets                  *int              `hcl:"udp_sockets"`
	EnableTruncate              *bool             `hcl:"enable_truncate"`
	RecursorTimeout             *string           `hcl:"recursor_timeout"`
	MaxStale                    *string           `hcl:"max_stale"`
	CacheMaxEntries             *int              `hcl:"cache_max_entries"`
	CacheIdleTimeout            *string           `hcl:"cache_idle_timeout"`
	RecursorStrategy            *string           `hcl:"recursor_strategy"`
	UnhealthyAnswer             *string           `hcl:"unhealthy_answer"`
	NodeMetaTXT                 *bool             `hcl:"node_meta_txt"`
	EnableAdditionalNodeMetaTXT *bool             `hcl:"enable_additional_node_meta_txt"`
	SOA                         *fileSOA          `hcl:"soa"`
	RRL                         *fileRRL          `hcl:"rrl"`
	AnswerCookie                *bool             `hcl:"answer_cookie"` // limits.go
	CookieSecret                *string           `hcl:"cookie_secret"`
	DNSSEC                      *fileDNSSEC       `hcl:"dnssec"` // dnssec.go
}

type fileSOA struct {
	Refresh *int `hcl:"refresh"`
	Retry   *int `hcl:"retry"`
	Expire  *int `hcl:"expire"`
	MinTTL  *int `hcl:"min_ttl"`
}

type filePorts struct {
	DNS     *int `hcl:"dns"`
	HTTP    *int `hcl:"http"`
	Server  *int `hcl:"server"`
	SerfLAN *int `hcl:"serf_lan"`
	SerfWAN *int `hcl:"serf_wan"`
	HTTPS   *int `hcl:"https"`
	DNSTLS  *int `hcl:"dns_tls"`
}

// LoadFile reads an HCL or JSON file (by extension: .json is JSON,
// anything else HCL) and applies every key it sets onto c. Unknown keys are
// an error naming the key, so a typo is not silently ignored. On error c is
// unchanged.
func LoadFile(path string, c *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	return applyFile(path, data, c)
}

// LoadPath applies path as Consul's -config-file and -config-dir do: a
// file is loaded with LoadFile; a directory has each of its files whose
// name ends in .hcl or .json loaded in name order, its subdirectories and
// other files left alone. On error c is unchanged.
func LoadPath(path string, c *Config) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if !info.IsDir() {
		return LoadFile(path, c)
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return fmt.Errorf("read config directory: %w", err)
	}
	out := *c
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if ext != ".hcl" && ext != ".json" {
			continue
		}
		file := filepath.Join(path, e.Name())
		// A symbolic link counts as what it points to.
		if fi, err := os.Stat(file); err != nil {
			return fmt.Errorf("read config file: %w", err)
		} else if fi.IsDir() {
			continue
		}
		if err := LoadFile(file, &out); err != nil {
			return err
		}
	}
	*c = out
	return nil
}

func applyFile(path string, data []byte, c *Config) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil // an empty file sets nothing, as in Consul
	}
	tree, err := parseConfig(path, data)
	if err != nil {
		return fmt.Errorf("parse config file %s: %w", path, err)
	}
	if err := checkFile(tree); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	svcs, err := takeServices(tree)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	var fc fileConfig
	if err := hcl.DecodeObject(&fc, tree); err != nil {
		return fmt.Errorf("decode config file %s: %w", path, err)
	}
	fc.fileServiceKeys = svcs
	// Applied to a copy, so that a bad value leaves c as it was.
	out := *c
	if err := fc.apply(&out); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	*c = out
	return nil
}

// apply sets every key of the file onto c.
func (fc *fileConfig) apply(c *Config) error {
	setIf(&c.NodeName, fc.NodeName)
	setIf(&c.NodeID, fc.NodeID)
	setIf(&c.Datacenter, fc.Datacenter)
	setIf(&c.Domain, fc.Domain)
	setIf(&c.BindAddr, fc.BindAddr)
	setIf(&c.AdvertiseAddr, fc.AdvertiseAddr)
	setIf(&c.AdvertiseAddrWAN, fc.AdvertiseWAN)
	setIf(&c.ClientAddr, fc.ClientAddr)
	setIf(&c.DataDir, fc.DataDir)
	setIf(&c.LogLevel, fc.LogLevel)
	setIf(&c.Server, fc.Server)
	if fc.Ports != nil {
		setIf(&c.Ports.DNS, fc.Ports.DNS)
		setIf(&c.Ports.HTTP, fc.Ports.HTTP)
		setIf(&c.Ports.Server, fc.Ports.Server)
		setIf(&c.Ports.SerfLAN, fc.Ports.SerfLAN)
		setIf(&c.Ports.SerfWAN, fc.Ports.SerfWAN)
		setIf(&c.Ports.HTTPS, fc.Ports.HTTPS)
		setIf(&c.Ports.DNSTLS, fc.Ports.DNSTLS)
	}
	if err := fc.applyCluster(c); err != nil {
		return err
	}
	setIf(&c.ACL.PrimaryDatacenter, fc.PrimaryDC)
	if fc.ACL != nil {
		if err := fc.ACL.apply(&c.ACL); err != nil {
			return err
		}
	}
	if fc.TLS != nil {
		if err := fc.TLS.apply(&c.TLS); err != nil {
			return err
		}
	}
	if fc.Limits != nil {
		fc.Limits.apply(c)
	}
	if fc.Telemetry != nil {
		if err := fc.Telemetry.apply(c); err != nil {
			return err
		}
	}
	if fc.HTTPConfig != nil {
		if err := fc.HTTPConfig.apply(c); err != nil {
			return err
		}
	}
	if err := fc.fileServerKeys.apply(c); err != nil {
		return err
	}
	if err := fc.fileCoordinateKeys.apply(c); err != nil {
		return err
	}
	if err := fc.fileGossipKeys.apply(c); err != nil {
		return err
	}
	if err := fc.fileServiceKeys.apply(c); err != nil {
		return err
	}
	fc.fileAddressKeys.apply(c)
	if err := fc.fileLogKeys.apply(c); err != nil {
		return err
	}
	setIf(&c.AltDomain, fc.AltDomain)
	if fc.NodeMeta != nil {
		c.NodeMeta = fc.NodeMeta
	}
	if fc.Recursors != nil {
		c.Resolver.Recursors = fc.Recursors
	}
	if fc.DNS != nil {
		return fc.DNS.apply(c)
	}
	return nil
}

// applyCluster sets the clustering and agent keys onto c.
func (fc *fileConfig) applyCluster(c *Config) error {
	setIf(&c.BootstrapExpect, fc.BootstrapExpect)
	if fc.RetryJoin != nil {
		c.Join = fc.RetryJoin
	}
	if fc.RetryJoinWAN != nil {
		c.JoinWAN = fc.RetryJoinWAN
	}
	setIf(&c.RetryMax, fc.RetryMax)
	setIf(&c.EncryptKey, fc.Encrypt)
	setIf(&c.EnableScriptChecks, fc.EnableScriptChecks)
	setIf(&c.EnableDebug, fc.EnableDebug)
	for _, d := range []struct {
		key, example string
		v            *string
		dst          *time.Duration
	}{
		{"retry_interval", "30s", fc.RetryInterval, &c.RetryInterval},
		{"reconnect_timeout", "72h", fc.ReconnectTimeout, &c.ReconnectTimeout},
		{"check_update_interval", "5m", fc.CheckUpdateInterval, &c.CheckUpdateInterval},
		{"ae_interval", "1m", fc.AEInterval, &c.AEInterval},
	} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			return &FieldError{Field: d.key, Reason: fmt.Sprintf("%q is not a duration such as %q", *d.v, d.example)}
		}
		*d.dst = v
	}
	return nil
}

// apply sets the keys of a dns_config block onto the nested
// configurations of c they belong to.
func (f *fileDNS) apply(c *Config) error {
	z, r, ca := &c.Zones, &c.Resolver, &c.Cache
	dur := func(key string, dst *time.Duration, v *string) error {
		if v == nil {
			return nil
		}
		p, err := time.ParseDuration(*v)
		if err != nil {
			return &FieldError{Field: "dns_config." + key, Reason: fmt.Sprintf("%q is not a duration such as \"5s\"", *v)}
		}
		*dst = p
		return nil
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
		v   *string
	}{
		{"node_ttl", &z.NodeTTL, f.NodeTTL}, {"ptr_ttl", &z.PTRTTL, f.PTRTTL},
		{"recursor_timeout", &r.RecursorTimeout, f.RecursorTimeout},
		{"max_stale", &ca.MaxStale, f.MaxStale}, {"cache_idle_timeout", &ca.IdleTimeout, f.CacheIdleTimeout},
	} {
		if err := dur(d.key, d.dst, d.v); err != nil {
			return err
		}
	}
	if f.ServiceTTL != nil {
		z.ServiceTTLs = make(map[string]time.Duration, len(f.ServiceTTL))
		for k, v := range f.ServiceTTL {
			var p time.Duration
			if err := dur("service_ttl["+k+"]", &p, &v); err != nil {
				return err
			}
			z.ServiceTTLs[k] = p
		}
	}
	setIf(&c.OnlyPassing, f.OnlyPassing)
	setIf(&r.SetTC, f.EnableTruncate)
	setIf(&z.NodeMetaTXT, f.NodeMetaTXT)
	setIf(&z.AdditionalNodeMetaTXT, f.EnableAdditionalNodeMetaTXT)
	setIf(&r.UDPAnswerLimit, f.UDPAnswerLimit)
	setIf(&r.ARecordLimit, f.ARecordLimit)
	setIf(&r.UDPSockets, f.UDPSockets)
	setIf(&ca.MaxEntries, f.CacheMaxEntries)
	setIf(&r.RecursorStrategy, f.RecursorStrategy)
	setIf(&r.UnhealthyAnswer, f.UnhealthyAnswer)
	if f.MaxUDPSize != nil {
		if *f.MaxUDPSize < 512 || *f.MaxUDPSize > 65535 {
			return &FieldError{Field: "dns_config.max_udp_size", Reason: fmt.Sprintf("must be between 512 and 65535, got %d", *f.MaxUDPSize)}
		}
		r.UDPSize = uint16(*f.MaxUDPSize)
	}
	if f.RRL != nil {
		f.RRL.apply(c)
	}
	if err := f.applyCookies(c); err != nil {
		return err
	}
	if f.DNSSEC != nil {
		if err := f.DNSSEC.apply(c); err != nil {
			return err
		}
	}
	if f.SOA != nil {
		for _, p := range []struct {
			key string
			dst *uint32
			v   *int
		}{
			{"refresh", &z.SOA.Refresh, f.SOA.Refresh}, {"retry", &z.SOA.Retry, f.SOA.Retry},
			{"expire", &z.SOA.Expire, f.SOA.Expire}, {"min_ttl", &z.SOA.MinTTL, f.SOA.MinTTL},
		} {
			if p.v == nil {
				continue
			}
			// RFC 2181 8: TTL-like values are 31-bit.
			if *p.v < 0 || *p.v > 1<<31-1 {
				return &FieldError{Field: "dns_config.soa." + p.key, Reason: fmt.Sprintf("must be between 0 and 2147483647 seconds, got %d", *p.v)}
			}
			*p.dst = uint32(*p.v)
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

// setIf sets *dst to *v when the file gave the key (v is not nil).
func setIf[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}
