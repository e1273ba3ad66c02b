package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// linkPkg is the package of the small program linking raft and each store
// (internal/link/...), "raft" being raft alone.
const linkPkg = "github.com/cairndns/cairn/examples/bench/logstore/internal/link/"

// measureLink builds the link programs (go build, as a release is built)
// and reports each store's size over raft's alone and the modules it adds.
func measureLink(ctx context.Context, work string, stores []string, res *results) error {
	base, baseMods, err := buildLink(ctx, work, "raft")
	if err != nil {
		return err
	}
	for _, s := range stores {
		size, mods, err := buildLink(ctx, work, s)
		if err != nil {
			return err
		}
		var added []string
		for m, v := range mods {
			if _, ok := baseMods[m]; !ok {
				added = append(added, m+" "+v)
			}
		}
		slices.Sort(added)
		res.set("binary: size over raft alone (raft alone: "+fmt.Sprintf("%.2f MiB)", float64(base)/(1<<20)), s,
			fmt.Sprintf("+%.0f KiB", float64(size-base)/1024))
		res.set("binary: modules added", s, fmt.Sprint(len(added)))
		res.notes = append(res.notes, fmt.Sprintf("\nmodules %s adds to raft alone:\n  %s", storeKinds[s].module, strings.Join(added, "\n  ")))
	}
	return nil
}

func buildLink(ctx context.Context, work, name string) (int64, map[string]string, error) {
	out := filepath.Join(work, "link-"+name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, linkPkg+name)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("go build %s: %w", linkPkg+name, err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, nil, err
	}
	bi, err := buildinfo.ReadFile(out)
	if err != nil {
		return 0, nil, err
	}
	mods := map[string]string{}
	for _, d := range bi.Deps {
		mods[d.Path] = d.Version
	}
	return fi.Size(), mods, nil
}
