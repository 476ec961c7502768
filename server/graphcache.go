package server

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// graphCache keeps prepared graphs (decoded, validated, compiled) by the
// sha256 of the JSON they came from. Clients run the same graph over and
// over (AgentFlow's client posts it inline with every run; the UI's Run
// button starts the same saved workflow), and preparing it again cost
// about a tenth of a short run's CPU. A graph that has errors is never
// kept: its problems are worked out again, so every request reports them.
type graphCache = lru[*engine.PreparedGraph]

// Bounds: a few hundred distinct graphs and at most 32 MiB of their
// definitions (a large graph, kept once, costs several times its
// definition's size in compiled form).
const (
	graphCacheItems = 256
	graphCacheBytes = 32 << 20
)

func newGraphCache(items, bytes int) *graphCache {
	return newLRU(items, bytes, func(pg *engine.PreparedGraph) int { return len(pg.Definition()) })
}

// lru keeps values by a sha256 key, the most recently used first, within
// a count and a size bound. The zero V is "not there".
type lru[V comparable] struct {
	mu       sync.Mutex
	ll       *list.List // front: most recently used
	m        map[[32]byte]*list.Element
	bytes    int // sizes held
	maxItems int
	maxBytes int
	size     func(V) int
}

type lruEntry[V any] struct {
	key  [32]byte
	v    V
	size int
}

func newLRU[V comparable](items, bytes int, size func(V) int) *lru[V] {
	return &lru[V]{ll: list.New(), m: map[[32]byte]*list.Element{}, maxItems: items, maxBytes: bytes, size: size}
}

func (c *lru[V]) get(key [32]byte) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruEntry[V]).v
}

func (c *lru[V]) put(key [32]byte, v V) {
	size := c.size(v)
	if size > c.maxBytes/4 {
		return // one huge value would push out everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok { // made twice at once: keep the first
		c.ll.MoveToFront(el)
		return
	}
	c.m[key] = c.ll.PushFront(&lruEntry[V]{key: key, v: v, size: size})
	c.bytes += size
	for c.ll.Len() > c.maxItems || c.bytes > c.maxBytes {
		old := c.ll.Back().Value.(*lruEntry[V])
		c.ll.Remove(c.ll.Back())
		delete(c.m, old.key)
		c.bytes -= old.size
	}
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Where a graph comes from: each prepares its own entries, as each
// decodes and checks in its own way (an entry that one way accepted must
// not let a graph skip another way's checks).
const (
	fromRequest = "request" // a graph posted with a run
	fromSaved   = "saved"   // a saved workflow's stored graph
	fromCompat  = "compat"  // AgentFlow's /api/run, checked before normalization
)

// prepareGraph decodes, validates and compiles raw, a drawn graph's JSON,
// or returns what an earlier request from the same source with the same
// bytes prepared. decode turns raw into a graph and maps its errors to the
// caller's messages; check, if not nil, vets the decoded graph before the
// engine does.
func (s *Server) prepareGraph(from string, raw []byte, decode func([]byte) (*graph.Graph, error), check func(*graph.Graph) error) (*engine.PreparedGraph, error) {
	h := sha256.New()
	h.Write([]byte(from))
	h.Write([]byte{0})
	h.Write(raw)
	var key [32]byte
	h.Sum(key[:0])
	if pg := s.graphs.get(key); pg != nil {
		return pg, nil
	}
	g, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(g); err != nil {
			return nil, err
		}
	}
	pg, err := s.e.PrepareGraph(g)
	if err != nil {
		return nil, startErr(err)
	}
	s.graphs.put(key, pg)
	return pg, nil
}

// decodeRequestGraph is prepareGraph's decode for a graph in a request.
func decodeRequestGraph(raw []byte) (*graph.Graph, error) {
	g, _, err := decodeGraph(json.RawMessage(raw))
	return g, err
}
