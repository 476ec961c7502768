package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

const fakeLLMHelp = `usage: switchyard fake-llm [flags]

Serves a fake OpenAI-compatible endpoint (chat completions and the
Responses API) for demos without an API key, browser tests and load tests.
Point OPENAI_BASE_URL at the printed url.

It answers "echo: <last user message>" (or JSON of the requested schema's
shape), streamed in a few deltas, and reports token usage (about one token
per 4 bytes; in streams when stream_options.include_usage is set).

It calls the tools it is offered (an agent's subagents) when the last user
message asks for it (case-insensitive):
  "use <toolname>"                     calls that tool, e.g. "use subagent_researcher_n2"
  "delegate", "call subagents",
  "use tools", "use your tools"        calls every offered tool
Each call's arguments fill the tool's string parameters with the message.
After the results come back it answers "echo: <message>" followed by one
line "<toolname>: <result>" per call.

With --script FILE (YAML or JSON), conversations that match one of the
file's rules (a regexp on the first user message, optionally one on the
system prompt) get scripted turns instead: tool calls such as Read, Edit
and Bash, branches on the tool results, and a final text. The turn is
worked out from the transcript alone, so a resumed agent loop gets the
right next turn. Other conversations get the answers above. Example:

  rules:
    - match: "fix the failing test"
      turns:
        - label: test
          tool_calls:
            - name: Bash
              arguments: {command: "sh test.sh"}
        - unless_result_contains: FAILED
          text: "Done: {{last_result}}"
        - max_times: 3
          tool_calls:
            - name: Edit
              arguments: {file_path: calc.sh, old_string: "a - b", new_string: "a + b"}
          goto: test

The format (conditions, goto, max_times, delay, placeholders) is described
in internal/fakeopenai/SCRIPT.md.

GET /_stats answers {"requests": N, "cpuUs": U, "conns": C}: the requests
served so far, the CPU time (user+system, µs; Linux) the fake has used and
the connections it has accepted. switchyard load reads it before and after
a scenario to print the fake's CPU per call beside the server's CPU per
run: on a noisy machine their ratio varies far less than either figure.

With --tls it serves HTTPS and HTTP/2, as hosted providers do, with a
certificate of its own made at start for 127.0.0.1 and localhost, written
to --cert-out FILE (PEM) for clients to trust: a Go program such as
switchyard serve trusts it with SSL_CERT_FILE=FILE in its environment.

flags:
`

// cmdFakeLLM serves the built-in fake OpenAI-compatible endpoint: the
// --script file's turns for conversations it matches, else
// fakeopenai.DemoReply.
func cmdFakeLLM(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fake-llm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fakeLLMHelp)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	latency := fs.Duration("latency", 0, "delay before each reply")
	scriptPath := fs.String("script", "", "YAML or JSON `file` of scripted agent turns (see above)")
	chunkDelay := fs.Duration("chunk-delay", 0, "delay between streamed chunks (when not given: latency/8, at most 100ms)")
	whole := fs.Bool("whole", false, "answer \"echo: <message>\" in one chunk and call no tools (the load tool's workload)")
	useTLS := fs.Bool("tls", false, "serve HTTPS and HTTP/2 with a certificate made at start (see --cert-out)")
	certOut := fs.String("cert-out", "", "with --tls: write the certificate (PEM) to this `file`")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if *certOut != "" && !*useTLS {
		fmt.Fprintln(stderr, "switchyard fake-llm: --cert-out needs --tls")
		return exitUsage
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "chunk-delay" })
	if !given {
		*chunkDelay = fakeChunkDelay(*latency)
	}
	reply := fakeopenai.DemoReply
	if *whole {
		reply = fakeopenai.DefaultReply
	}
	opts := []fakeopenai.Option{fakeopenai.WithAddr(*addr), fakeopenai.WithLatency(*latency),
		fakeopenai.WithChunkDelay(*chunkDelay), fakeopenai.WithRequestLogLimit(0),
		fakeopenai.WithHandler(reply)}
	if *scriptPath != "" {
		sc, err := fakeopenai.LoadScript(*scriptPath)
		if err != nil {
			fmt.Fprintln(stderr, "switchyard fake-llm:", err)
			return exitFailed
		}
		opts = append(opts, fakeopenai.WithScript(sc))
	}
	var cert *tls.Certificate
	if *useTLS {
		c, pemBytes, err := selfSignedCert()
		if err != nil {
			fmt.Fprintln(stderr, "switchyard fake-llm: --tls:", err)
			return exitFailed
		}
		if *certOut != "" {
			if err := os.WriteFile(*certOut, pemBytes, 0o644); err != nil {
				fmt.Fprintln(stderr, "switchyard fake-llm: --cert-out:", err)
				return exitFailed
			}
		}
		cert = &c
	}
	srv, url, err := startFakeWithStats(*addr, cert, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "switchyard fake-llm:", err)
		return exitUsage
	}
	// Scripts read this line: point OPENAI_BASE_URL at the URL.
	fmt.Fprintf(stdout, "fake-llm listening url=%s\n", url)
	<-ctx.Done()
	shut := make(chan struct{})
	go func() { _ = srv.Close(); close(shut) }()
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
	}
	return exitOK
}

// fakeChunkDelay paces streamed chunks from the reply latency: a slow fake
// also streams visibly, without the stream taking much longer than the wait.
func fakeChunkDelay(latency time.Duration) time.Duration {
	return min(latency/8, 100*time.Millisecond)
}

// fakeWithStats is the fake API plus GET /_stats, on its own listener.
type fakeWithStats struct {
	fake *fakeopenai.Server
	http *http.Server
}

// startFakeWithStats listens on addr (loopback only, as fakeopenai.Start)
// and serves the fake with the /_stats endpoint beside it, over HTTPS and
// HTTP/2 when cert is given; the URL returned ends in /v1, for
// OPENAI_BASE_URL.
func startFakeWithStats(addr string, cert *tls.Certificate, opts ...fakeopenai.Option) (*fakeWithStats, string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, "", fmt.Errorf("%w: %q", fakeopenai.ErrInvalidAddr, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	fake := fakeopenai.New(opts...)
	api := fake.Handler()
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_stats", func(w http.ResponseWriter, _ *http.Request) {
		// Requests come from the fake's own counter; the stats request
		// itself is not one of them.
		cpu, _ := procCPU(os.Getpid())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fakeStats{Requests: fake.TotalRequests(), CPUUs: cpu.total().Microseconds(), Conns: conns.Load()})
	})
	mux.Handle("/", api)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}}
	scheme := "http"
	if cert != nil {
		scheme = "https"
		// ServeTLS offers HTTP/2 as well, as a hosted provider does.
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
		go func() { _ = hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { _ = hs.Serve(ln) }()
	}
	return &fakeWithStats{fake: fake, http: hs}, scheme + "://" + ln.Addr().String() + "/v1", nil
}

// selfSignedCert makes a certificate for 127.0.0.1, ::1 and localhost,
// good for a day, and returns it with its PEM for clients to trust.
func selfSignedCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "switchyard fake-llm"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // trusted as its own root through SSL_CERT_FILE
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes, nil
}

// Close stops listening, then releases the fake's hanging requests.
func (f *fakeWithStats) Close() error {
	err := f.http.Close()
	return errors.Join(err, f.fake.Close())
}

// fakeStats is the answer of the fake's GET /_stats.
type fakeStats struct {
	Requests int64 `json:"requests"`
	CPUUs    int64 `json:"cpuUs"`
	Conns    int64 `json:"conns"` // connections accepted
}
