package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a driver that runs one long bash step
// (TestHelperDriver) and is then SIGKILLed by the test.
const helperEnv = "SWITCHYARD_PROC_HELPER_PIDFILE"

// TestHelperDriver is not a test: it is the driver process of
// TestStepDiesWithItsDriver.
func TestHelperDriver(t *testing.T) {
	pidfile := os.Getenv(helperEnv)
	if pidfile == "" {
		t.Skip("helper process only")
	}
	_, _, _ = Run(context.Background(), Spec{Name: "bash",
		Args: []string{"-c", `echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; sleep 60`, pidfile}})
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestStepDiesWithItsDriver: a driver killed with SIGKILL takes its step's
// process with it (the parent-death signal), instead of leaving it to run
// on beside the process that takes the run over.
func TestStepDiesWithItsDriver(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDriver$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+pidfile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pid int
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper's step did not start within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !running(pid) {
		t.Fatalf("step %d is not running", pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	killed := time.Now()
	for running(pid) {
		if time.Since(killed) > 30*time.Second {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("step %d still runs 30 s after its driver was SIGKILLed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("step gone %s after its driver was killed", time.Since(killed).Round(time.Millisecond))
}

// TestRetiredThreadsDoNotKillSteps: the parent-death signal fires when the
// forking thread exits; threads retired by goroutines that exit while
// locked to them must not take running steps down.
func TestRetiredThreadsDoNotKillSteps(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "sleep 0.5; echo ok"}})
			errs <- err
		}()
	}
	// Retire threads while the steps run: each goroutine exits locked.
	stop := time.Now().Add(time.Second)
	for time.Now().Before(stop) {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("step failed while threads were retired: %v", err)
		}
	}
}

// TestKillGroupsLeavesOthersAlone: KillGroups kills a group that is still
// the recorded one, and leaves a group whose leader is another process (a
// reused pid: another start time) alone.
func TestKillGroupsLeavesOthersAlone(t *testing.T) {
	start := func() (*exec.Cmd, Group) {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		st, err := StartTime(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return c, Group{ID: c.Process.Pid, Start: st}
	}
	ours, g := start()
	other, og := start()
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	waited := make(chan struct{})
	go func() { _ = ours.Wait(); close(waited) }()
	reused := Group{ID: og.ID, Start: og.Start + 1} // same pid, another process
	killed, err := KillGroups([]Group{g, reused, {ID: 0}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != g {
		t.Errorf("killed %v, want only %v", killed, g)
	}
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the recorded group was not killed")
	}
	if !running(other.Process.Pid) {
		t.Error("a group whose leader is another process was killed")
	}
	if killed, err := KillGroups([]Group{g}, time.Second); err != nil || len(killed) != 0 {
		t.Errorf("KillGroups of a gone group = %v, %v", killed, err)
	}
}
