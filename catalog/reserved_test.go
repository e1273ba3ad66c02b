package catalog

import "testing"

func TestValidateCheckOwner(t *testing.T) {
	for _, tc := range []struct {
		check *Check
		ok    bool
	}{
		{&Check{CheckID: "web-alive", ServiceID: "web"}, true},
		{&Check{CheckID: SerfCheckID}, true},
		{&Check{CheckID: SerfCheckID, ServiceID: "web"}, false},
		{&Check{CheckID: NodeMaintenanceCheckID, ServiceID: "web"}, false},
		{&Check{CheckID: ServiceMaintenancePrefix + "db", ServiceID: "db"}, true},
		{&Check{CheckID: ServiceMaintenancePrefix + "db", ServiceID: "web"}, false},
		{&Check{CheckID: RaftStorageCheckID, ServiceID: ServerServiceID}, true},
		{&Check{CheckID: RaftStorageCheckID, ServiceID: "web"}, false},
		{&Check{CheckID: RaftStorageCheckID}, false},
	} {
		err := ValidateCheckOwner("CheckID", tc.check)
		if got := err == nil; got != tc.ok {
			t.Errorf("ValidateCheckOwner(%q on %q): got %v, want ok=%v", tc.check.CheckID, tc.check.ServiceID, err, tc.ok)
		}
	}
}
