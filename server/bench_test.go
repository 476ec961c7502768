package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
)

// watchDelivery connects n watchers to a run and records, per delivered
// event, the time from its emission (its timestamp) to its arrival.
func watchDelivery(b *testing.B, v *env, runID string, n int) (wait func() []time.Duration) {
	b.Helper()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range n {
		c, _, err := v.dial("/api/runs/"+runID+"/ws", nil)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			local := make([]time.Duration, 0, 1024)
			var ev struct {
				Seq       int64     `json:"seq"`
				Timestamp time.Time `json:"timestamp"`
			}
			var last int64
			for {
				_, raw, err := c.ReadMessage()
				if err != nil {
					if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
						break
					}
					b.Errorf("watcher: %v", err)
					break
				}
				now := time.Now()
				if err := json.Unmarshal(raw, &ev); err != nil {
					b.Error(err)
					break
				}
				if ev.Seq != last+1 {
					b.Errorf("gap: %d after %d", ev.Seq, last)
				}
				last = ev.Seq
				local = append(local, now.Sub(ev.Timestamp))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	waitFor(b, "watchers", func() bool { k, _ := v.srv.hub.subscriberCounts(); return k == n })
	return func() []time.Duration { wg.Wait(); return lat }
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkWSDelivery50Throughput: one run emits b.N events as fast as the
// store takes them; 50 websocket watchers receive every one. Reports
// events/s emitted (and committed) and deliveries/s, with the latency
// from emission to arrival under that saturation.
func BenchmarkWSDelivery50Throughput(b *testing.B) {
	v := newEnvTB(b, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(b, v.st, engine.StatusRunning)
	wait := watchDelivery(b, v, id, 50)
	b.ResetTimer()
	start := time.Now()
	for seq := 0; seq < b.N; seq += 100 {
		emitEvents(v.st, id, int64(seq), min(100, b.N-seq), "a line of output from a busy node")
	}
	finishRawRun(b, v.st, id, int64(b.N))
	lat := wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "deliveries/s")
	reportLatency(b, lat)
}

// BenchmarkWSDelivery50Paced: the run emits 2000 events/s (in batches of
// 10 every 5ms), a busy but realistic rate; reports the emission-to-arrival
// latency at 50 watchers.
func BenchmarkWSDelivery50Paced(b *testing.B) {
	v := newEnvTB(b, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(b, v.st, engine.StatusRunning)
	wait := watchDelivery(b, v, id, 50)
	b.ResetTimer()
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	for seq := 0; seq < b.N; seq += 10 {
		<-tick.C
		emitEvents(v.st, id, int64(seq), min(10, b.N-seq), "a line of output from a busy node")
	}
	tick.Stop()
	finishRawRun(b, v.st, id, int64(b.N))
	lat := wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "deliveries/s")
	reportLatency(b, lat)
}

// BenchmarkRunsPerSecond starts b.N runs of start → agent → agent through
// POST /api/runs (8 clients at once) with an instant fake LLM, and counts
// until every run completed.
func BenchmarkRunsPerSecond(b *testing.B) {
	v := newEnvTB(b)
	body, _ := json.Marshal(map[string]any{"graph": threeNodeGraph()})
	const clients = 8
	ids := make(chan string, b.N)
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				res, err := http.Post(v.url+"/api/runs", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				var run struct {
					RunID string `json:"runId"`
				}
				err = json.NewDecoder(res.Body).Decode(&run)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusCreated {
					b.Errorf("start: %d %v", res.StatusCode, err)
					return
				}
				ids <- run.RunID
			}
		}()
	}
	wg.Wait()
	close(ids)
	ctx := context.Background()
	failed := 0
	for id := range ids {
		r, err := v.e.Wait(ctx, id)
		if err != nil || r.Status != engine.StatusCompleted {
			failed++
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if failed > 0 {
		b.Fatalf("%d runs did not complete", failed)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	st := v.st.Stats()
	b.Logf("batches/run %.2f ops/run %.2f events/run %.2f", float64(st.Batches)/float64(b.N), float64(st.Ops)/float64(b.N), float64(st.EventsWritten)/float64(b.N))
}
