// Command logstore compares the two Raft log stores cairn can use on disk,
// raft-wal and raft-boltdb/v2, as hashicorp/raft's LogStore and
// StableStore (issue 28), and prints the figures side by side:
//
//   - replicated writes: three Raft nodes in this process, each with its
//     store in its own directory on disk (fsync on, as in production),
//     talking over TCP on loopback; writes a second and p50/p99 latency of
//     raft.Apply on the leader with 1 and with 16 concurrent appliers,
//     entries of -size bytes (a catalog registration is about 300);
//   - restart: a log of -entries entries and no snapshot, then the time to
//     open the store and the time until raft.NewRaft returns (which reads
//     every entry after the last snapshot, looking for configuration
//     changes), with the files in the page cache and dropped from it;
//   - a damaged tail: write -tail-entries entries, close, then either cut
//     the last file short at a random offset within the last -tail-cut
//     bytes of what was written, or tear the tail (raft-wal: zeros from
//     such an offset to the end of the written frames; bbolt, whose commit
//     ends with a meta page write: zeros from a random point of the newest
//     meta page); reopen in a child process (a crash there is a result,
//     not the bench's): does it open, how many entries are lost, is every
//     entry it returns intact, does it take the next write;
//   - what each links: a small program built with only raft and each
//     store (internal/link/...), its size and the modules it adds.
//
// Run it from the repository (it builds the link programs with go build):
//
//	go run ./examples/bench/logstore
//
// It runs in two to four minutes (four on two cores shared with other
// work, load average 20); -duration, -entries, -restarts and -trials trade
// time for precision. Directories are made under -dir (default the system's
// temporary directory; it must be on the disk under test, not tmpfs) and
// removed at the end unless -keep.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type config struct {
	stores      []string
	dir         string
	duration    time.Duration
	appliers    []int
	size        int
	entries     int
	batch       int
	restarts    int
	tailEntries int
	tailCut     int
	trials      int
	seed        int64
	link        bool
	keep        bool
	trial       string // child mode: reopen a cut store and report
}

func main() {
	var cfg config
	var stores, appliers string
	flag.StringVar(&stores, "stores", "wal,bolt", "`stores` to compare: wal (raft-wal) and/or bolt (raft-boltdb/v2)")
	flag.StringVar(&cfg.dir, "dir", os.TempDir(), "`directory` on the disk under test, for the stores' directories")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long each replicated write phase runs")
	flag.StringVar(&appliers, "appliers", "1,16", "concurrent appliers of each write phase, comma-separated")
	flag.IntVar(&cfg.size, "size", 300, "`bytes` of each entry's data")
	flag.IntVar(&cfg.entries, "entries", 200000, "entries in the log of the restart measurement")
	flag.IntVar(&cfg.batch, "batch", 64, "entries per StoreLogs when the restart log is written")
	flag.IntVar(&cfg.restarts, "restarts", 1, "restarts timed in each page cache state; the fastest is reported")
	flag.IntVar(&cfg.tailEntries, "tail-entries", 2000, "entries written before the tail is cut")
	flag.IntVar(&cfg.tailCut, "tail-cut", 32<<10, "the cut lands within this many `bytes` of the end of what was written")
	flag.IntVar(&cfg.trials, "trials", 10, "trials of each tail damage per store, each at another offset")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the cut offsets")
	flag.BoolVar(&cfg.link, "link", true, "build the small programs that link each store (needs the go command)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the stores' directories")
	flag.StringVar(&cfg.trial, "trial", "", "internal: reopen the cut store `kind:dir:entries` and print the outcome")
	flag.Parse()
	if cfg.trial != "" {
		os.Exit(trialChild(cfg))
	}
	cfg.stores = strings.Split(stores, ",")
	for _, a := range strings.Split(appliers, ",") {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "logstore: -appliers: %q is not a positive number\n", a)
			os.Exit(2)
		}
		cfg.appliers = append(cfg.appliers, n)
	}
	if cfg.duration <= 0 || cfg.size < 1 || cfg.entries < 2 || cfg.batch < 1 || cfg.restarts < 1 || cfg.tailEntries < 2 || cfg.tailCut < 1 || cfg.trials < 0 {
		fmt.Fprintln(os.Stderr, "logstore: -duration, -size, -batch, -restarts and -tail-cut must be positive, -entries and -tail-entries at least 2, -trials not negative")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("logstore", func(ctx context.Context) error { return run(ctx, cfg) })
}

// results holds the figures: one row per figure, one column per store.
type results struct {
	stores []string
	rows   []string
	cells  map[string]map[string]string
	notes  []string // printed after the table
}

func (r *results) set(row, store, value string) {
	if r.cells == nil {
		r.cells = map[string]map[string]string{}
	}
	if r.cells[row] == nil {
		r.cells[row] = map[string]string{}
		r.rows = append(r.rows, row)
	}
	r.cells[row][store] = value
	fmt.Printf("  %s, %s: %s\n", store, row, value)
}

func (r *results) print() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "\nfigure")
	for _, s := range r.stores {
		fmt.Fprintf(w, "\t%s", storeKinds[s].title())
	}
	fmt.Fprintln(w)
	for _, row := range r.rows {
		fmt.Fprint(w, row)
		for _, s := range r.stores {
			fmt.Fprintf(w, "\t%s", r.cells[row][s])
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	for _, n := range r.notes {
		fmt.Println(n)
	}
}

func run(ctx context.Context, cfg config) error {
	for _, s := range cfg.stores {
		if _, ok := storeKinds[s]; !ok {
			return fmt.Errorf("-stores: unknown store %q (want wal or bolt)", s)
		}
	}
	work, err := os.MkdirTemp(cfg.dir, "cairn-bench-logstore-")
	if err != nil {
		return err
	}
	defer func() {
		if !cfg.keep {
			os.RemoveAll(work)
		}
	}()
	fmt.Printf("work directory %s (%s), %s\n", work, fsType(work), loopback.LoadAverage())
	res := &results{stores: cfg.stores}

	for _, n := range cfg.appliers {
		for _, s := range cfg.stores {
			if err := ctx.Err(); err != nil {
				return err
			}
			fmt.Printf("replicated writes, %s, %d appliers, %s\n", s, n, cfg.duration)
			if err := measureWrites(ctx, cfg, work, storeKinds[s], n, res); err != nil {
				return fmt.Errorf("%s, %d appliers: %w", s, n, err)
			}
		}
	}
	for _, s := range cfg.stores {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Printf("restart with %d entries, %s\n", cfg.entries, s)
		if err := measureRestart(cfg, work, storeKinds[s], res); err != nil {
			return fmt.Errorf("%s restart: %w", s, err)
		}
	}
	if cfg.trials > 0 {
		for _, s := range cfg.stores {
			if err := ctx.Err(); err != nil {
				return err
			}
			fmt.Printf("damaged tail, %s, %d trials of each damage\n", s, cfg.trials)
			if err := measureTornTail(ctx, cfg, work, storeKinds[s], res); err != nil {
				return fmt.Errorf("%s torn tail: %w", s, err)
			}
		}
	}
	if cfg.link {
		fmt.Println("linking")
		if err := measureLink(ctx, work, cfg.stores, res); err != nil {
			return fmt.Errorf("link: %w", err)
		}
	}
	res.print()
	fmt.Printf("\n%s; %s\n", loopback.LoadAverage(), fsType(work))
	return nil
}

// moduleVersion is the version of module path this program was built with.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "?"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "?"
}

// fsType names the file system holding dir, from /proc/self/mounts (the
// longest mount point that is a prefix of dir).
func fsType(dir string) string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "file system unknown"
	}
	best, typ := "", "unknown"
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if (dir == f[1] || strings.HasPrefix(dir, strings.TrimSuffix(f[1], "/")+"/")) && len(f[1]) > len(best) {
			best, typ = f[1], f[2]
		}
	}
	if typ == "tmpfs" {
		return "file system tmpfs: fsync costs nothing there, the figures say little"
	}
	return "file system " + typ + " on " + best
}

var errCut = errors.New("nothing to cut")
