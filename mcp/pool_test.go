package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// starts counts the stdio servers a pool started, by server name.
type starts struct {
	mu    sync.Mutex
	count map[string]int
	pgids []int
}

func (s *starts) hook(server string, pgid int, _ uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == nil {
		s.count = map[string]int{}
	}
	s.count[server]++
	s.pgids = append(s.pgids, pgid)
}

func (s *starts) of(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[server]
}

func TestPool(t *testing.T) {
	t.Parallel()
	ts := newTestHTTPServer(t, false)
	cfg := Config{Servers: map[string]ServerConfig{
		"helper": helperConfig(t, "serve", nil),
		"remote": httpConfig(ts.url, TypeHTTP),
		"dead":   helperConfig(t, "exit", nil),
	}}
	var st starts
	p := NewPool(cfg, Options{BaseEnv: baseEnv(), LookupEnv: tokenEnv, OnStart: st.hook})
	defer p.Close()
	if st.of("helper") != 0 {
		t.Fatal("a server started before its first use")
	}

	// Many callers at once: one connect.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("call %d", i)
			res, err := p.Call(context.Background(), "helper", "echo", json.RawMessage(fmt.Sprintf(`{"text": %q}`, msg)))
			if err == nil && res.Text != msg {
				err = fmt.Errorf("got %q, want %q", res.Text, msg)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := st.of("helper"); n != 1 {
		t.Errorf("helper started %d times", n)
	}

	tools, err := p.Tools(context.Background(), "remote", "helper")
	if err != nil {
		t.Fatal(err)
	}
	if tools[0].Server != "helper" || tools[len(tools)-1].Server != "remote" {
		t.Errorf("tools are not in server order: first %s, last %s", tools[0].Server, tools[len(tools)-1].Server)
	}

	// A failed start is remembered, not retried at every call.
	_, err1 := p.Session(context.Background(), "dead")
	_, err2 := p.Session(context.Background(), "dead")
	if err1 == nil || err1 != err2 || !strings.Contains(err1.Error(), "exit status 7") || st.of("dead") != 1 {
		t.Errorf("dead: %v / %v, started %d times", err1, err2, st.of("dead"))
	}
	if _, err := p.Session(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `mcp server "nope" is not configured`) {
		t.Errorf("unknown server: %v", err)
	}

	// A server that crashed starts again on next use.
	if _, err := p.Call(context.Background(), "helper", "crash", nil); !errors.Is(err, ErrServerExited) {
		t.Fatalf("crash: %v", err)
	}
	waitFor(t, "the crashed session to end", func() bool {
		s, err := p.Session(context.Background(), "helper")
		return err == nil && !sessionEnded(s) && st.of("helper") == 2
	})
	if res, err := p.Call(context.Background(), "helper", "echo", json.RawMessage(`{"text":"back"}`)); err != nil || res.Text != "back" {
		t.Fatalf("after the restart: %+v, %v", res, err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	pgids := append([]int(nil), st.pgids...)
	st.mu.Unlock()
	waitFor(t, "every server to be gone", func() bool {
		for _, pg := range pgids {
			if !processGone(pg) {
				return false
			}
		}
		return true
	})
	if _, err := p.Call(context.Background(), "remote", "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
}

// TestPoolGivesUp: a server that keeps crashing is not started forever.
func TestPoolGivesUp(t *testing.T) {
	t.Parallel()
	var st starts
	p := NewPool(Config{Servers: map[string]ServerConfig{"crashy": helperConfig(t, "serve", nil)}},
		Options{BaseEnv: baseEnv(), OnStart: st.hook})
	defer p.Close()
	for i := 0; i <= MaxRestarts; i++ {
		s, err := p.Session(context.Background(), "crashy")
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		if _, err := s.Call(context.Background(), "crash", nil); !errors.Is(err, ErrServerExited) {
			t.Fatalf("crash %d: %v", i+1, err)
		}
		waitFor(t, "the session to end", func() bool { return sessionEnded(s) })
	}
	_, err := p.Session(context.Background(), "crashy")
	if err == nil || !strings.Contains(err.Error(), "not started again") || st.of("crashy") != MaxRestarts+1 {
		t.Fatalf("after %d crashes: %v (started %d times)", MaxRestarts+1, err, st.of("crashy"))
	}
}

// TestPoolCallerGivesUp: a caller whose context ends stops waiting for a
// slow start; Close ends the start without waiting for StartTimeout.
func TestPoolCallerGivesUp(t *testing.T) {
	t.Parallel()
	var st starts
	p := NewPool(Config{Servers: map[string]ServerConfig{"silent": helperConfig(t, "noinit", nil)}},
		Options{BaseEnv: baseEnv(), OnStart: st.hook, StartTimeout: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Session(ctx, "silent")
		errc <- err
	}()
	waitFor(t, "the server to start", func() bool { return st.of("silent") == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller: %v", err)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close waited for the start timeout")
	}
	st.mu.Lock()
	pgid := st.pgids[0]
	st.mu.Unlock()
	waitFor(t, "the server to be gone", func() bool { return processGone(pgid) })
}
