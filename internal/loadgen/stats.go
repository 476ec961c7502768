// Package loadgen drives a running Switchyard server over HTTP and
// websockets to measure throughput, latency and correctness under load.
// `switchyard load` is its command line.
package loadgen

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// Latencies collects durations and reports percentiles.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one duration.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// Summary is a latency distribution in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// Summary computes the percentiles (nearest rank).
func (l *Latencies) Summary() Summary {
	l.mu.Lock()
	d := append([]time.Duration(nil), l.d...)
	l.mu.Unlock()
	if len(d) == 0 {
		return Summary{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(d)))) - 1
		if i < 0 {
			i = 0
		}
		return ms(d[i])
	}
	return Summary{Count: len(d), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: ms(d[len(d)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s Summary) String() string {
	return fmt.Sprintf("p50 %.1fms  p90 %.1fms  p99 %.1fms  max %.1fms  (n=%d)", s.P50, s.P90, s.P99, s.Max, s.Count)
}

// PairedDiff compares two measurements taken in pairs (b[i] right after
// or before a[i], as `switchyard load runs --against` takes them): the
// mean of the per-pair changes from a to b in percent, and its standard
// error (the sample standard deviation over √n; 0 for fewer than two
// pairs). Pairs make the comparison hold on a machine whose speed drifts:
// each pair sees the same neighbours, so the drift cancels out of the
// change, and the standard error says how far the mean may be from the
// truth. Pairs where a is not positive are skipped.
func PairedDiff(a, b []float64) (meanPct, sePct float64) {
	var d []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 {
			d = append(d, (b[i]/a[i]-1)*100)
		}
	}
	if len(d) == 0 {
		return 0, 0
	}
	for _, x := range d {
		meanPct += x
	}
	meanPct /= float64(len(d))
	if len(d) < 2 {
		return meanPct, 0
	}
	var ss float64
	for _, x := range d {
		ss += (x - meanPct) * (x - meanPct)
	}
	return meanPct, math.Sqrt(ss/float64(len(d)-1)) / math.Sqrt(float64(len(d)))
}
