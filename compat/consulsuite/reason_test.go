package consulsuite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailureReason checks the line picked from the kinds of output the
// suite's failures produce.
func TestFailureReason(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"t.Fatalf", "=== RUN   TestX\n    kv_test.go:51: err: Unexpected response code: 404\n--- FAIL: TestX (1.00s)\n",
			"kv_test.go:51: err: Unexpected response code: 404"},
		{"testify", "    acl_test.go:367: \n        \tError Trace:\t/x/acl_test.go:367\n        \tError:      \tNot equal: \n" +
			"        \t            \texpected: 1\n        \t            \tactual  : 2\n        \t            \tDiff:\n" +
			"        \t            \t--- Expected\n        \t            \t+++ Actual\n        \t            \t- SecretID: \"a\",\n" +
			"        \t            \t+ SecretID: \"\",\n        \tTest:       \tTestX\n--- FAIL: TestX (1.00s)\n",
			`acl_test.go:367: Not equal:; - SecretID: "a",; + SecretID: "",`},
		{"retry with testutil's log first", "    retry.go:219: server.go:342: CONFIG JSON: {}\n    retry.go:219: retry.go:62: Bad: []\n",
			"Bad: []"},
		{"panic", "--- FAIL: TestX (2.20s)\npanic: interface conversion: interface {} is nil, not string [recovered]\n\ngoroutine 6 [running]:\n",
			"panics: interface conversion: interface {} is nil, not string [recovered]"},
		{"hang", "panic: test timed out after 1m0s\n\trunning tests:\n", "hangs: timed out after 1m0s"},
	} {
		if got := failureReason([]byte(tc.out), nil); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestListRoundTrip checks that the list reads back as it was written,
// reasons included.
func TestListRoundTrip(t *testing.T) {
	l, err := readList(listFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), listFile)
	if err := l.write(path); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(listFile)
	got, _ := os.ReadFile(path)
	if string(got) != string(want) {
		t.Errorf("%s changes when read and written again; write it with the harness's format", listFile)
	}
	for _, e := range l.entries {
		if e.status == statusFail && !strings.HasPrefix(e.reason, "[") {
			t.Errorf("%s: %s fails without a [group] in its reason", listFile, e.name)
		}
	}
}
