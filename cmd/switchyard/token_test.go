package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The token can come from a file, so it never sits in the process's
// arguments; --token still works but warns that every local process can
// read it from /proc/PID/cmdline.
func TestServeTokenFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--addr", "0.0.0.0:0", "--data", t.TempDir(), "--token-file", file)
	p.url = strings.Replace(strings.Replace(p.url, "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
	if status, _, _ := p.get(t, "/api/config", ""); status != http.StatusUnauthorized {
		t.Fatalf("without token: %d", status)
	}
	if status, _, body := p.get(t, "/api/config", "tk-from-file"); status != http.StatusOK {
		t.Fatalf("with the file's token: %d %s", status, body)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "cmdline"))
	if err == nil && strings.Contains(string(cmdline), "tk-from-file") {
		t.Errorf("the token is in the process's arguments: %q", cmdline)
	}
	if strings.Contains(p.log(), "warning: --token") {
		t.Errorf("--token-file warned about --token:\n%s", p.log())
	}
	p.stop(t)

	q := startServe(t, nil, "--data", t.TempDir(), "--token", "tk-arg")
	if !strings.Contains(q.log(), "warning: --token puts the token in the process's arguments") {
		t.Errorf("--token did not warn:\n%s", q.log())
	}
	q.stop(t)
}
