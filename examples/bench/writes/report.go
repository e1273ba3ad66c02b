package main

import (
	"fmt"
	"io"
	"slices"
)

// describe says what a kind of write sends to each system.
var describe = map[string]string{
	"kv":       "KV writes of 100-byte values to distinct keys: PUT /v1/kv/<key> (cairn, consul), POST /v3/kv/put (etcd)",
	"register": "service registrations: PUT /v1/catalog/register (cairn, consul)",
}

// report prints, for each kind of write and writer count, every round's
// figures per system, each system's medians over the rounds, and the
// ratio of cairn's writes/s to each other system's, round by round.
func report(w io.Writer, o options, results map[key]map[string][]result) {
	for _, op := range o.ops {
		for _, n := range o.writers {
			bySys := results[key{op, n}]
			if len(bySys) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n== %s; %d %s over the 3 servers, %s a run\n", describe[op], n, plural(n, "writer"), o.duration)
			fmt.Fprintf(w, "%-7s %-7s %10s %9s %9s %11s %7s\n", "round", "system", "writes/s", "p50 ms", "p99 ms", "CPU µs/w", "errors")
			for r := range o.rounds {
				for _, s := range o.systems {
					if rs := bySys[s]; r < len(rs) {
						x := rs[r]
						fmt.Fprintf(w, "%-7d %-7s %10.0f %9.2f %9.2f %11.0f %7d\n", r+1, s, x.perSec(), x.p50, x.p99, x.cpuPer, x.errors)
					}
				}
			}
			for _, s := range o.systems {
				rs := bySys[s]
				if len(rs) == 0 {
					continue
				}
				fmt.Fprintf(w, "%-7s %-7s %10.0f %9.2f %9.2f %11.0f %7d\n", "median", s,
					median(rs, result.perSec), median(rs, func(x result) float64 { return x.p50 }),
					median(rs, func(x result) float64 { return x.p99 }), median(rs, func(x result) float64 { return x.cpuPer }),
					sum(rs, func(x result) int { return x.errors }))
			}
			cairn := bySys["cairn"]
			for _, s := range o.systems {
				other := bySys[s]
				if s == "cairn" || len(cairn) == 0 || len(other) == 0 {
					continue
				}
				var ratios []float64
				for r := range min(len(cairn), len(other)) {
					if d := other[r].perSec(); d > 0 {
						ratios = append(ratios, cairn[r].perSec()/d)
					}
				}
				if len(ratios) > 0 {
					fmt.Fprintf(w, "cairn/%s writes/s: median %.2f (rounds: %s)\n", s, medianOf(ratios), join(ratios))
				}
			}
		}
	}
	fmt.Fprintln(w, "\n(writes/s: answered writes over the run, from the first sent to the last answered; p50, p99: latency of each answered write,")
	fmt.Fprintln(w, "send to answer; CPU µs/w: the three servers' user+system CPU over the run divided by the writes answered; errors: writes not answered 200)")
}

func median(rs []result, f func(result) float64) float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	return medianOf(v)
}

// medianOf is the median of v (the mean of the middle two when there are
// an even number), 0 for none.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(rs []result, f func(result) int) int {
	n := 0
	for _, r := range rs {
		n += f(r)
	}
	return n
}

func join(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", x)
	}
	return s
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
