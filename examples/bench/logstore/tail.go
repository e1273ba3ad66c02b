package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// trialOutcome is what a child process found reopening a cut store.
type trialOutcome struct {
	Opened   bool   // the store opened
	First    uint64 // its first and last index
	Last     uint64
	Bad      int    // entries from First to Last that failed to read or read wrong
	Writable bool   // it took entry Last+1, and still had it after a reopen
	Err      string // the first error met, if any
}

// A damage is what a crash or a faulty disk leaves at the end of a store
// that was closed cleanly.
type damage struct {
	name  string
	apply func(kind storeKind, dir string, within int64, rng *rand.Rand) error
}

var damages = []damage{
	// The file system kept less of the tail file than was written and
	// synced (a disk that lied about a flush, a truncation).
	{"file cut short", func(kind storeKind, dir string, within int64, rng *rand.Rand) error {
		path, end, err := kind.tail(dir)
		if err != nil {
			return err
		}
		lo := max(0, end-within)
		return os.Truncate(path, lo+rng.Int64N(end-lo))
	}},
	// The last writes reached the disk only in part: from a point in them
	// on, they read as zeros (the file keeps its size).
	{"tail torn", func(kind storeKind, dir string, within int64, rng *rand.Rand) error {
		path, from, to, err := kind.lastWrite(dir, within, rng)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(make([]byte, to-from), from)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}},
}

// measureTornTail writes cfg.tailEntries entries into a store (in batches
// of 16, the last 64 one by one, as a quiet follower writes them), closes
// it, damages its tail in each way of damages, and reopens it in a child
// process, which may crash without taking the bench with it.
func measureTornTail(ctx context.Context, cfg config, work string, kind storeKind, res *results) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.seed), uint64(len(kind.name))))
	for _, dmg := range damages {
		var outs []trialOutcome
		var crashes []string
		for range cfg.trials {
			dir, err := os.MkdirTemp(work, kind.name+"-tail")
			if err != nil {
				return err
			}
			if err := writeTail(cfg, kind, dir); err != nil {
				return err
			}
			if err := dmg.apply(kind, dir, int64(cfg.tailCut), rng); err != nil {
				return fmt.Errorf("%s: %w", dmg.name, err)
			}
			out, crash, err := runTrial(ctx, exe, cfg, kind, dir)
			if err != nil {
				return err
			}
			if crash != "" {
				crashes = append(crashes, crash)
			} else {
				outs = append(outs, out)
			}
			os.RemoveAll(dir)
		}
		reportTrials(cfg, kind, dmg.name, outs, crashes, res)
	}
	return nil
}

func reportTrials(cfg config, kind storeKind, dmg string, outs []trialOutcome, crashes []string, res *results) {
	var opened, intact, writable int
	var lost []uint64
	var errs []string
	for _, o := range outs {
		if o.Opened {
			opened++
			lost = append(lost, uint64(cfg.tailEntries)-o.Last)
		}
		if o.Opened && o.Bad == 0 && o.First == 1 {
			intact++
		}
		if o.Writable {
			writable++
		}
		if o.Err != "" {
			errs = append(errs, o.Err)
		}
	}
	n := cfg.trials
	res.set(dmg+": opened / all intact / took the next write / crashed", kind.name,
		fmt.Sprintf("%d/%d / %d/%d / %d/%d / %d/%d", opened, n, intact, n, writable, n, len(crashes), n))
	lostRow := fmt.Sprintf("%s: entries lost of %d (within the last %d KiB)", dmg, cfg.tailEntries, cfg.tailCut>>10)
	if len(lost) > 0 {
		slices.Sort(lost)
		res.set(lostRow, kind.name, fmt.Sprintf("%d–%d", lost[0], lost[len(lost)-1]))
	} else {
		res.set(lostRow, kind.name, "-")
	}
	why := strings.Join(uniq(append(crashes, errs...)), "; ")
	if why == "" {
		why = "-"
	}
	res.set(dmg+": crash or error", kind.name, why)
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func writeTail(cfg config, kind storeKind, dir string) error {
	st, err := kind.open(dir)
	if err != nil {
		return err
	}
	// The stable store first, so that the last writes are the log's.
	if err := st.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		st.Close()
		return err
	}
	n := uint64(cfg.tailEntries)
	for i := uint64(1); i <= n; {
		size := uint64(16)
		if i+64 > n {
			size = 1
		}
		var batch []*raft.Log
		for ; i <= n && uint64(len(batch)) < size; i++ {
			batch = append(batch, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: entryData(i, cfg.size)})
		}
		if err := st.StoreLogs(batch); err != nil {
			st.Close()
			return err
		}
	}
	return st.Close()
}

// runTrial reopens the store in dir in a child process and returns its
// outcome, or a line saying how it crashed.
func runTrial(ctx context.Context, exe string, cfg config, kind storeKind, dir string) (trialOutcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, "-trial", kind.name+":"+strconv.Itoa(cfg.tailEntries)+":"+dir, "-size", strconv.Itoa(cfg.size))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return trialOutcome{}, "", fmt.Errorf("reopen trial: %w", context.Cause(ctx))
	}
	var out trialOutcome
	if runErr == nil {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return out, "", fmt.Errorf("reopen trial printed %q: %w", stdout.String(), err)
		}
		return out, "", nil
	}
	// The first line of a panic or fatal error names it.
	for line := range strings.Lines(stderr.String()) {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "unexpected fault") {
			return out, strings.TrimSpace(line), nil
		}
	}
	return out, fmt.Sprintf("%v: %.200s", runErr, stderr.String()), nil
}

// trialChild is the child process of runTrial: it reopens the store named
// by cfg.trial ("kind:entries:dir"), reads every entry, writes the next
// one, reopens again, and prints a trialOutcome as JSON.
func trialChild(cfg config) int {
	name, rest, _ := strings.Cut(cfg.trial, ":")
	nstr, dir, _ := strings.Cut(rest, ":")
	kind, ok := storeKinds[name]
	if _, err := strconv.Atoi(nstr); !ok || err != nil || dir == "" {
		fmt.Fprintf(os.Stderr, "logstore: bad -trial %q\n", cfg.trial)
		return 2
	}
	out := reopenCut(kind, dir, cfg.size)
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "logstore:", err)
		return 1
	}
	return 0
}

func reopenCut(kind storeKind, dir string, size int) (out trialOutcome) {
	fail := func(what string, err error) trialOutcome {
		if out.Err == "" {
			out.Err = fmt.Sprintf("%s: %v", what, err)
		}
		return out
	}
	st, err := kind.open(dir)
	if err != nil {
		return fail("open", err)
	}
	out.Opened = true
	if out.First, err = st.FirstIndex(); err != nil {
		st.Close()
		return fail("first index", err)
	}
	if out.Last, err = st.LastIndex(); err != nil {
		st.Close()
		return fail("last index", err)
	}
	for i := out.First; i <= out.Last && out.First > 0; i++ {
		var l raft.Log
		if err := st.GetLog(i, &l); err != nil {
			out.Bad++
			fail("get log", err)
			continue
		}
		if l.Index != i || !bytes.Equal(l.Data, entryData(i, size)) {
			out.Bad++
			fail("get log", fmt.Errorf("entry %d reads wrong", i))
		}
	}
	next := &raft.Log{Index: out.Last + 1, Term: 1, Type: raft.LogCommand, Data: entryData(out.Last+1, size)}
	err = st.StoreLogs([]*raft.Log{next})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail("store the next entry", err)
	}
	if st, err = kind.open(dir); err != nil {
		return fail("open after the next entry", err)
	}
	defer st.Close()
	var l raft.Log
	if err := st.GetLog(next.Index, &l); err != nil || !bytes.Equal(l.Data, next.Data) {
		return fail("read the next entry after a reopen", fmt.Errorf("%v (data intact: %v)", err, bytes.Equal(l.Data, next.Data)))
	}
	out.Writable = true
	return out
}
