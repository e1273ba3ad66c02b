package config

import "reflect"

// liveFields are the Config fields a reload applies
// (the TLS certificates are re-read from the files the running
// configuration names: a changed tls block needs a restart).
var liveFields = map[string]bool{"LogLevel": true, "Services": true}

// RestartOnly names the fields of Config that differ between running and
// loaded and that only a restart applies.
func RestartOnly(running, loaded Config) []string {
	var out []string
	rv, lv := reflect.ValueOf(running), reflect.ValueOf(loaded)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if liveFields[name] {
			continue
		}
		if !reflect.DeepEqual(rv.Field(i).Interface(), lv.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}
