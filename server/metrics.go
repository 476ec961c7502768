package server

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard/switchyard/engine"
)

// Metrics collects Prometheus metrics. It is an engine.Sink: node
// durations and LLM latency are derived from the events the engine emits,
// so pass it in engine.Config.Sinks as well as in Config.Metrics.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	nodeDuration *prometheus.HistogramVec
	llmLatency   *prometheus.HistogramVec
	llmErrors    *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	events       prometheus.Counter
	wsClients    *prometheus.GaugeVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	attachOnce sync.Once

	// What is in flight, by run id then node id, in shards by run id: the
	// sink runs for every step event of every run, and one lock would
	// have every core's runs queue on it.
	shards [metricsShards]metricsShard
}

const metricsShards = 16

type metricsShard struct {
	mu   sync.Mutex
	runs map[string]map[string]*nodeTrack
	_    [40]byte // keep shards' locks on separate cache lines
}

var metricsSeed = maphash.MakeSeed()

func (m *Metrics) shard(runID string) *metricsShard {
	return &m.shards[maphash.String(metricsSeed, runID)%metricsShards]
}

// tracked counts the runs with something in flight.
func (m *Metrics) tracked() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.runs)
		sh.mu.Unlock()
	}
	return n
}

type nodeTrack struct {
	typ      string
	llmStart time.Time
	model    string
}

// NewMetrics makes a Metrics with its own registry (plus Go and process
// collectors).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	for i := range m.shards {
		m.shards[i].runs = map[string]map[string]*nodeTrack{}
	}
	m.nodeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "switchyard_node_duration_seconds", Help: "Time a node took to execute, by node type and outcome.",
		Buckets: []float64{.001, .005, .025, .1, .5, 1, 2.5, 5, 10, 30, 60, 300, 900},
	}, []string{"type", "status"})
	m.llmLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchyard_llm_call_duration_seconds",
		Help:    "Time from an agent's prompt to the model's final answer (tool and subagent turns included), by model.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"model"})
	m.llmErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_llm_errors_total", Help: "Failed LLM calls: retried attempts and final failures.",
	}, []string{"kind"})
	m.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_runs_finished_total", Help: "Runs that ended in this process, by final status.",
	}, []string{"status"})
	m.events = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchyard_events_total", Help: "Run events emitted by the engine.",
	})
	m.wsClients = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchyard_websocket_clients", Help: "Connected websocket clients, by stream (run events or run statuses).",
	}, []string{"stream"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_http_requests_total", Help: "HTTP requests by method, route and status code.",
	}, []string{"method", "route", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "switchyard_http_request_duration_seconds", Help: "HTTP request handling time by route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route"})
	m.reg.MustRegister(m.nodeDuration, m.llmLatency, m.llmErrors, m.runsFinished, m.events, m.wsClients,
		m.httpRequests, m.httpDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.wsClients.WithLabelValues("run")
	m.wsClients.WithLabelValues("status")
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Registry is the registry /metrics serves; add your own collectors to it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// attach registers the collectors that read a server's state.
func (m *Metrics) attach(s *Server) {
	m.attachOnce.Do(func() {
		m.reg.MustRegister(&runsCollector{h: s.hub},
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "switchyard_store_queue_depth", Help: "Operations waiting in the store's event-writer queue.",
			}, func() float64 { return float64(s.st.Stats().QueueDepth) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_events_written_total", Help: "Events committed by the store writer.",
			}, func() float64 { return float64(s.st.Stats().EventsWritten) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_commits_total",
				Help: "Transactions the store writer committed; each holds whatever events and operations were queued (group commit).",
			}, func() float64 { return float64(s.st.Stats().Batches) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_writer_busy_seconds_total",
				Help: "Time the store's single writer spent writing and reporting batches; its rate is the writer's utilization, and near 1 the writer bounds throughput (more cores add none).",
			}, func() float64 { return s.st.Stats().WriterBusy.Seconds() }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_events_dropped_total", Help: "Events the store gave up on.",
			}, func() float64 { return float64(s.st.Stats().EventsDropped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_write_errors_total", Help: "Store batches that failed to commit.",
			}, func() float64 { return float64(s.st.Stats().WriteErrors) }),
		)
	})
}

func (m *Metrics) observeRequest(method, route string, status int, d time.Duration) {
	m.httpRequests.WithLabelValues(method, route, statusLabel(status)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(d.Seconds())
}

// statusLabels are the label values of the HTTP statuses, made once:
// strconv.Itoa allocates for numbers from 100 up, on every request.
var statusLabels = func() (t [600]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusLabel(status int) string {
	if status >= 0 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}

// eventData holds the fields of event data the metrics read.
type eventData struct {
	Type        string
	Status      string
	DurationMs  int64
	HasDuration bool
	Model       string
	Final       bool
}

// The fields of eventData, as a set: each event type's data is searched
// for the ones its metrics use only (a step_end's data holds the node's
// whole output, and each field is a search through it).
type eventFields uint8

const (
	fieldType eventFields = 1 << iota
	fieldStatus
	fieldDuration
	fieldModel
	fieldFinal
	allFields = fieldType | fieldStatus | fieldDuration | fieldModel | fieldFinal
)

// fieldsOf is what Emit reads of an event type's data.
func fieldsOf(typ string) eventFields {
	switch typ {
	case engine.EvStepStart:
		return fieldType
	case engine.EvStepEnd:
		return fieldStatus | fieldDuration
	case engine.EvStartPrompt:
		return fieldModel
	case engine.EvLLMError:
		return fieldFinal
	}
	return 0
}

// parseEventData reads the few top-level fields the metrics use without
// decoding the rest: this runs for every event on the engine's hot path.
func parseEventData(data []byte) eventData { return parseEventFields(data, allFields) }

// parseEventFields is parseEventData for the fields in want only.
func parseEventFields(data []byte, want eventFields) eventData {
	var d eventData
	if want&fieldType != 0 {
		d.Type, _ = stringField(data, "type")
	}
	if want&fieldStatus != 0 {
		d.Status, _ = stringField(data, "status")
	}
	if want&fieldModel != 0 {
		d.Model, _ = stringField(data, "model")
	}
	if want&fieldDuration != 0 {
		if raw, ok := topField(data, "durationMs"); ok {
			if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
				d.DurationMs, d.HasDuration = v, true
			}
		}
	}
	if want&fieldFinal != 0 {
		if raw, ok := topField(data, "final"); ok {
			d.Final = string(raw) == "true"
		}
	}
	return d
}

// topField returns the raw value of "key" in a flat JSON object. A match
// cannot start inside a string value: there every quote is escaped.
func topField(data []byte, key string) ([]byte, bool) {
	var buf [32]byte // the keys are short: the pattern stays on the stack
	pat := append(append(append(buf[:0], '"'), key...), '"', ':')
	i := bytes.Index(data, pat)
	if i < 0 {
		return nil, false
	}
	v := data[i+len(pat):]
	if len(v) == 0 {
		return nil, false
	}
	if v[0] == '"' {
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case '\\':
				j++
			case '"':
				return v[:j+1], true
			}
		}
		return nil, false
	}
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return nil, false
	}
	return bytes.TrimSpace(v[:end]), true
}

func stringField(data []byte, key string) (string, bool) {
	raw, ok := topField(data, key)
	if !ok || len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return labelValues.intern(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// labelValues are the node types, statuses and model names seen, kept so
// that reading one from an event does not allocate a string each time:
// they are few, and become labels. A map replaced whole on each new value
// (rare), so that reading takes no lock.
var labelValues interner

type interner struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]string]
}

// internedMax bounds the values kept; past it a value is copied as usual.
const internedMax = 256

func (in *interner) intern(b []byte) string {
	if m := in.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok { // no allocation for the lookup
			return s
		}
	}
	s := string(b)
	in.mu.Lock()
	defer in.mu.Unlock()
	var next map[string]string
	if old := in.m.Load(); old != nil {
		if len(*old) >= internedMax {
			return s
		}
		next = maps.Clone(*old)
	} else {
		next = map[string]string{}
	}
	next[s] = s
	in.m.Store(&next)
	return s
}

// Emit implements engine.Sink. It runs on the engine's hot path: it only
// parses the data of the few event types it measures.
func (m *Metrics) Emit(ev *engine.Event) {
	m.events.Inc()
	switch ev.Type {
	case engine.EvStepStart, engine.EvStepEnd, engine.EvStartPrompt, engine.EvLLMResponse, engine.EvLLMError:
	case engine.EvRunStatus:
		if s := engine.RunStatus(ev.Content); s.Terminal() {
			m.runsFinished.WithLabelValues(string(s)).Inc()
			sh := m.shard(ev.RunID)
			sh.mu.Lock()
			delete(sh.runs, ev.RunID)
			sh.mu.Unlock()
		}
		return
	default:
		return
	}
	d := parseEventFields(ev.Data, fieldsOf(ev.Type))
	now := time.Now()
	sh := m.shard(ev.RunID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nodes := sh.runs[ev.RunID]
	if nodes == nil {
		nodes = map[string]*nodeTrack{}
		sh.runs[ev.RunID] = nodes
	}
	n := nodes[ev.NodeID]
	if n == nil {
		n = &nodeTrack{typ: "unknown"}
		nodes[ev.NodeID] = n
	}
	switch ev.Type {
	case engine.EvStepStart:
		if d.Type != "" {
			n.typ = d.Type
		}
	case engine.EvStartPrompt:
		n.llmStart, n.model = now, d.Model
	case engine.EvLLMResponse:
		if !n.llmStart.IsZero() {
			m.llmLatency.WithLabelValues(modelLabel(n.model)).Observe(now.Sub(n.llmStart).Seconds())
			n.llmStart = time.Time{}
		}
	case engine.EvLLMError:
		if d.Final {
			m.llmErrors.WithLabelValues("final").Inc()
			n.llmStart = time.Time{}
		} else {
			m.llmErrors.WithLabelValues("retry").Inc()
		}
	case engine.EvStepEnd:
		if d.HasDuration {
			status := d.Status
			if status == "" {
				status = "unknown"
			}
			m.nodeDuration.WithLabelValues(n.typ, status).Observe(float64(d.DurationMs) / 1000)
		}
		delete(nodes, ev.NodeID)
	}
}

func modelLabel(m string) string {
	if m == "" {
		return "default"
	}
	return m
}

// runsCollector reports the runs that are not over, by status.
type runsCollector struct{ h *hub }

var runsDesc = prometheus.NewDesc("switchyard_runs", "Runs that are not over, by status.", []string{"status"}, nil)

func (c *runsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runsDesc }

func (c *runsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.h.countByStatus()
	for _, s := range []engine.RunStatus{engine.StatusPending, engine.StatusRunning, engine.StatusPaused, engine.StatusInterrupted} {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}

func (s *Server) metricsHandler(c echo.Context) error {
	s.metrics.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}
