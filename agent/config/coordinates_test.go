package config

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestLoadFileCoordinateKeys(t *testing.T) {
	t.Parallel()
	want := Coordinates{Disable: true, SyncIntervalMin: 2 * time.Second, UpdatePeriod: 100 * time.Millisecond,
		UpdateBatchSize: 64, UpdateMaxBatches: 2}
	for name, content := range map[string]string{
		"cairn.hcl": `
disable_coordinates = true
sync_coordinate_interval_min = "2s"
coordinate_update_period = "100ms"
coordinate_update_batch_size = 64
coordinate_update_max_batches = 2
`,
		"cairn.json": `{"disable_coordinates": true, "sync_coordinate_interval_min": "2s",
"coordinate_update_period": "100ms", "coordinate_update_batch_size": 64, "coordinate_update_max_batches": 2}`,
	} {
		got := validConfig()
		if err := LoadFile(writeConfig(t, name, content), &got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got.Coordinates, want) {
			t.Errorf("%s: got %+v, want %+v", name, got.Coordinates, want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: got %v, want valid", name, err)
		}
	}
	got := validConfig()
	err := LoadFile(writeConfig(t, "bad.hcl", `coordinate_update_period = "often"`), &got)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "coordinate_update_period" {
		t.Errorf("a bad duration: got %v, want an error naming coordinate_update_period", err)
	}
}

func TestValidateCoordinateKeys(t *testing.T) {
	t.Parallel()
	c := validConfig()
	c.Coordinates = Coordinates{SyncIntervalMin: time.Millisecond, UpdatePeriod: time.Millisecond}
	got := fieldsOf(c.Validate())
	slices.Sort(got)
	want := []string{"coordinate_update_batch_size", "coordinate_update_max_batches", "coordinate_update_period", "sync_coordinate_interval_min"}
	if !slices.Equal(got, want) {
		t.Errorf("got errors for %q, want %q", got, want)
	}
}

// TestDatacenterNamedNear: "near" is the DNS label of the local datacenter
// sorted by distance (web.service.near.cluster), so no datacenter may be
// named so.
func TestDatacenterNamedNear(t *testing.T) {
	t.Parallel()
	for _, dc := range []string{"near", "NEAR"} {
		c := validConfig()
		c.Datacenter = dc
		if got := fieldsOf(c.Validate()); !slices.Equal(got, []string{"datacenter"}) {
			t.Errorf("datacenter %q: got errors for %q, want datacenter", dc, got)
		}
	}
}
