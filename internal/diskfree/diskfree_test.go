package diskfree

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestOfReportsTheRoomOfADirectory(t *testing.T) {
	sp, err := Of(t.TempDir())
	if err != nil {
		t.Fatalf("Of: %v", err)
	}
	if sp.Total == 0 || sp.Free > sp.Total {
		t.Fatalf("got %+v, want 0 < Free <= Total", sp)
	}
	if _, err := Of(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing path: got %v, want an error wrapping ENOENT", err)
	}
}
