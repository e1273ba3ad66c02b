package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configReference is the reference of every config file key, which
// TestConfigReferenceIsComplete holds to the file structs.
const configReference = "../../docs/reference/configuration.md"

// fileKeys returns the dotted path of every key a config file may set,
// walked from the hcl tags of fileConfig in field order. A block's keys
// are listed under it (dns_config.rrl.slip); a block whose type was
// already listed under another key (tls.https, the keys of tls.defaults;
// services, those of service) and a map of the user's own keys
// (node_meta) are one key each.
func fileKeys() []string {
	var keys []string
	seen := map[reflect.Type]bool{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for f := range t.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("hcl"), ",")
			if opts == "squash" {
				walk(prefix, f.Type)
				continue
			}
			if name == "" {
				continue
			}
			key := prefix + name
			ft := deref(f.Type)
			if ft.Kind() == reflect.Slice {
				ft = deref(ft.Elem())
			}
			if ft.Kind() != reflect.Struct || seen[ft] {
				keys = append(keys, key)
				continue
			}
			seen[ft] = true
			walk(key+".", ft)
		}
	}
	walk("", reflect.TypeFor[fileConfig]())
	return keys
}

// referenceKeyRow is a row of the reference's tables: its first cell is
// one key in backquotes.
var referenceKeyRow = regexp.MustCompile("^\\|\\s*`([a-z0-9_.]+)`\\s*\\|")

// TestConfigReferenceIsComplete fails when a config file key is missing
// from docs/reference/configuration.md, or the reference names a key the
// config file does not take.
func TestConfigReferenceIsComplete(t *testing.T) {
	data, err := os.ReadFile(configReference)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		if m := referenceKeyRow.FindStringSubmatch(line); m != nil {
			documented[m[1]] = true
		}
	}
	keys := fileKeys()
	var missing, unknown []string
	for _, k := range keys {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if len(missing) > 0 {
		t.Errorf("config keys missing from docs/reference/configuration.md (add a table row \"| `key` | flag | default | meaning |\" for each, in the table of its block):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/reference/configuration.md names keys the config file does not take (remove or rename their rows):\n  %s", strings.Join(unknown, "\n  "))
	}
}
