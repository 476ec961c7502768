//go:build linux

package faults

// A bash step's whole process group dies with its driver (hardening issue,
// item 14): `switchyard run` SIGKILLed while a step runs background
// children leaves nothing of the step running, at once, with no takeover
// to clean up after it.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stepGroup lists the live processes of process group pgid: "pid:comm".
func stepGroup(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		k := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[k+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, e.Name()+":"+string(b[bytes.IndexByte(b, '(')+1:k]))
	}
	return out
}

func TestKilledRunTakesItsStepGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pgidFile := filepath.Join(dir, "pgid")
	wf := fmt.Sprintf(`name: group
description: a step with children in its group
nodes:
  - id: kids
    bash: |
      cut -d' ' -f5 /proc/$$/stat > %[1]s.tmp && mv %[1]s.tmp %[1]s
      sleep 300 &
      sleep 300
      wait
`, pgidFile)
	file := filepath.Join(dir, "wf.yaml")
	if err := os.WriteFile(file, []byte(wf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "run", file, "--data", filepath.Join(dir, "data"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWITCHYARD_DATA=", "SWITCHYARD_DB=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pgid int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pgidFile); err == nil {
			pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pgid > 0 && strings.Count(fmt.Sprint(stepGroup(pgid)), ":sleep") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step did not start its children within a minute (pgid %d: %v)\n%s", pgid, stepGroup(pgid), stderr.String())
		}
	}
	before := stepGroup(pgid)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	killed := time.Now()
	for len(stepGroup(pgid)) > 0 {
		if time.Since(killed) > 30*time.Second {
			left := stepGroup(pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("30 s after `switchyard run` was SIGKILLed its step's group still has %v (had %v)", left, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the step's group %v was gone %s after its driver was killed", before, time.Since(killed).Round(time.Millisecond))
}
