package config

import (
	"reflect"
	"slices"
)

// ReloadKeys are the keys a reload (SIGHUP, PUT /v1/agent/reload) applies
// to the running agent, by the Config field they set. The TLS
// certificates are also read again from the files the running
// configuration names, but a changed tls block needs a restart.
var ReloadKeys = map[string]string{
	"LogLevel": "log_level",
	"Services": "service/services",
}

// RestartKeys are the keys only a restart applies, by the Config field
// they set: a reload that changes one keeps the running value and says so.
var RestartKeys = map[string]string{
	"NodeName":              "node_name",
	"NodeID":                "node_id",
	"Datacenter":            "datacenter",
	"NodeMeta":              "node_meta",
	"Domain":                "domain",
	"BindAddr":              "bind_addr",
	"AdvertiseAddr":         "advertise_addr",
	"AdvertiseAddrWAN":      "advertise_addr_wan",
	"ClientAddr":            "client_addr",
	"Ports":                 "ports",
	"DataDir":               "data_dir",
	"Dev":                   "-dev",
	"Server":                "server",
	"LogFile":               "log_file/log_rotate_bytes/log_rotate_duration/log_rotate_max_files",
	"LogJSON":               "log_json",
	"AltDomain":             "alt_domain",
	"Zones":                 "dns_config (node_ttl, ptr_ttl, service_ttl, soa, node_meta_txt, enable_additional_node_meta_txt)",
	"Resolver":              "dns_config (DNS server keys), recursors, limits.dns_max_tcp_conns*",
	"Cache":                 "dns_config (cache_max_entries, cache_idle_timeout, max_stale)",
	"DNSSEC":                "dns_config.dnssec",
	"OnlyPassing":           "dns_config.only_passing",
	"BootstrapExpect":       "bootstrap_expect",
	"Join":                  "retry_join",
	"JoinWAN":               "retry_join_wan",
	"RetryInterval":         "retry_interval",
	"RetryMax":              "retry_max",
	"EncryptKey":            "encrypt",
	"ReconnectTimeout":      "reconnect_timeout",
	"EnableScriptChecks":    "enable_script_checks",
	"EnableDebug":           "enable_debug",
	"CheckUpdateInterval":   "check_update_interval",
	"AEInterval":            "ae_interval",
	"ACL":                   "acl",
	"TLS":                   "tls",
	"Limits":                "limits",
	"Telemetry":             "telemetry",
	"HTTP":                  "http_config",
	"Performance":           "performance",
	"Autopilot":             "autopilot",
	"RaftLogStore":          "raft_logstore",
	"ServerServiceName":     "server_service_name",
	"RaftSnapshotThreshold": "raft_snapshot_threshold",
	"RaftSnapshotInterval":  "raft_snapshot_interval",
	"RaftTrailingLogs":      "raft_trailing_logs",
	"Coordinates":           "disable_coordinates/sync_coordinate_interval_min/coordinate_update_*",
	"Addresses":             "addresses",
	"UnixSockets":           "unix_sockets",
	"GossipLAN":             "gossip_lan",
	"GossipWAN":             "gossip_wan",
	"LeaveOnTerminate":      "leave_on_terminate",
	"SkipLeaveOnInterrupt":  "skip_leave_on_interrupt",
}

// Changes compares the configuration the agent runs with (running: as
// started, with what earlier reloads applied) with one a reload loaded,
// and returns the keys that differ: those the reload applies, and those
// only a restart applies. A field in neither table counts as
// restart-only, under its Go name.
func Changes(running, loaded Config) (reloaded, restart []string) {
	rv, lv := reflect.ValueOf(running), reflect.ValueOf(loaded)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if reflect.DeepEqual(rv.Field(i).Interface(), lv.Field(i).Interface()) {
			continue
		}
		if key, ok := ReloadKeys[name]; ok {
			reloaded = append(reloaded, key)
		} else if key, ok := RestartKeys[name]; ok {
			restart = append(restart, key)
		} else {
			restart = append(restart, name)
		}
	}
	slices.Sort(reloaded)
	slices.Sort(restart)
	return reloaded, restart
}

// Reloaded is running with the keys a reload applies taken from loaded:
// what the agent runs with after the reload.
func Reloaded(running, loaded Config) Config {
	out := running
	ov, lv := reflect.ValueOf(&out).Elem(), reflect.ValueOf(loaded)
	for name := range ReloadKeys {
		ov.FieldByName(name).Set(lv.FieldByName(name))
	}
	return out
}
