package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// readLoadGraph reads --graph: a drawn graph's JSON (the editor's shape or
// the legacy one; the server normalizes and validates it when the run
// starts), or a file that holds it under "graph" (a run request).
func readLoadGraph(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Graph json.RawMessage `json:"graph"`
		Nodes json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a graph's JSON: %w", path, err)
	}
	if len(probe.Nodes) == 0 && len(probe.Graph) > 0 {
		return readGraphObject(path, probe.Graph)
	}
	return readGraphObject(path, b)
}

func readGraphObject(path string, b json.RawMessage) (json.RawMessage, error) {
	var g struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("%s: not a graph's JSON: %w", path, err)
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("%s: the graph has no \"nodes\"", path)
	}
	return b, nil
}

// parseCPUList reads a CPU list as taskset -c takes it: "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1024 {
			return nil, fmt.Errorf("%q: want CPU numbers and ranges such as 0-3,8", s)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// serverPinning is the CPU set of the server load starts: --server-cpus,
// else the first --cores CPUs; both given must agree.
func serverPinning(cores int, list string) ([]int, error) {
	cpus, err := parseCPUList(list)
	if err != nil {
		return nil, fmt.Errorf("--server-cpus: %w", err)
	}
	switch {
	case cores < 0:
		return nil, fmt.Errorf("--cores %d: want a positive number", cores)
	case cores > 0 && len(cpus) > 0 && len(cpus) != cores:
		return nil, fmt.Errorf("--cores %d but --server-cpus %q names %d CPUs", cores, list, len(cpus))
	case cores > 0 && len(cpus) == 0:
		for c := range cores {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// fakeChild is a `switchyard fake-llm` load started.
type fakeChild struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	// With TLS: the certificate's file (SSL_CERT_FILE for the servers load
	// starts) and a client that trusts it (for the fake's /_stats).
	certFile string
	http     *http.Client
	dir      string
}

// startFakeChild runs this binary's fake-llm (replies in one chunk, no chunk
// delay: the load workload) on addr, pinned to cpus when given; over
// HTTPS and HTTP/2 with useTLS.
func startFakeChild(ctx context.Context, addr string, latency time.Duration, cpus []int, useTLS bool) (*fakeChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"fake-llm", "--whole", "--addr", addr, "--latency", latency.String(), "--chunk-delay", "0s"}
	var dir, certFile string
	if useTLS {
		if dir, err = os.MkdirTemp("", "switchyard-fake-"); err != nil {
			return nil, err
		}
		certFile = filepath.Join(dir, "fake.pem")
		args = append(args, "--tls", "--cert-out", certFile)
	}
	cmd := exec.Command(exe, args...)
	if len(cpus) > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startPinned(cmd, cpus); err != nil {
		return nil, err
	}
	f := &fakeChild{cmd: cmd, done: make(chan struct{}), certFile: certFile, dir: dir}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "fake-llm listening url="); ok {
				select {
				case found <- u:
				default:
				}
			}
		}
		close(f.done)
	}()
	select {
	case f.url = <-found:
		if !useTLS {
			return f, nil
		}
		// The certificate is written before the url line.
		if f.http, err = trustingClient(certFile); err == nil {
			return f, nil
		}
	case <-f.done:
		err = errors.New("fake-llm exited before listening")
	case <-time.After(30 * time.Second):
		err = errors.New("fake-llm did not report its url within 30s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.stop()
	return nil, err
}

// trustingClient is an HTTP client that trusts the certificates in a
// PEM file (and only those).
func trustingClient(certFile string) (*http.Client, error) {
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%s: no certificate", certFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

func (f *fakeChild) stop() {
	if f.dir != "" {
		defer os.RemoveAll(f.dir)
	}
	if f.cmd.Process != nil {
		_ = f.cmd.Process.Signal(os.Interrupt)
		select {
		case <-f.done:
		case <-time.After(10 * time.Second):
			_ = f.cmd.Process.Kill()
		}
		_ = f.cmd.Wait()
	}
}
