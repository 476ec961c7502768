package proc

import (
	"context"
	"errors"
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

// groupHelperEnv makes the test binary a driver that runs one bash step
// (TestHelperGroupDriver), records its process group, and is then
// SIGKILLed by the test.
const groupHelperEnv = "SWITCHYARD_PROC_GROUP_HELPER"

// TestHelperGroupDriver is not a test: it is the driver process of
// TestStepGroupDiesWithItsDriver. The environment gives the pgid file and
// the script.
func TestHelperGroupDriver(t *testing.T) {
	spec := os.Getenv(groupHelperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	file, script, _ := strings.Cut(spec, "\n")
	if kill, ok := strings.CutPrefix(script, "kill-reaper;"); ok {
		// A reaper that died is started again, and told the live groups.
		script = kill
		pid := liveReaper(t, 0)
		reaper.mu.Lock()
		gone := reaper.gone
		reaper.mu.Unlock()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		// Reaped, not just a zombie: its main thread turns zombie while
		// the others still hold the pipe (writes then succeed, and are
		// lost). A driver learns of a dead reaper from its wait.
		<-gone
	}
	_, _, _ = Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", script},
		OnStart: func(pgid int, _ uint64) {
			_ = os.WriteFile(file+".tmp", []byte(strconv.Itoa(pgid)), 0o600)
			_ = os.Rename(file+".tmp", file)
		}})
}

// liveReaper runs steps until one is registered with a reaper whose pid
// is not notPID, and returns that reaper's pid (never 0). A step whose
// leader exits before its start time is read (a zombie counts as gone) is
// not registered and starts no reaper: `true` often is not, so reaper.pid
// stayed 0, and the helper's kill(0, SIGKILL) then killed its own process
// group: the test binary, go test and the script that ran them, silently
// (TestReaperKillDoesNotHitTheTestGroup).
func liveReaper(t testing.TB, notPID int) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, err := Run(context.Background(), Spec{Name: "sleep", Args: []string{"0.1"}}); err != nil {
			t.Fatal(err)
		}
		reaper.mu.Lock()
		pid, live, broken := reaper.pid, reaper.w != nil, reaper.broken
		reaper.mu.Unlock()
		if pid > 0 && live && pid != notPID {
			return pid
		}
		if broken {
			t.Fatal("no reaper can run here")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no step registered with a reaper within a minute (reaper pid %d)", pid)
		}
	}
}

// members lists the live processes of process group pgid: "pid:comm".
func members(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pg, _, err := statOf(e.Name())
		if err != nil || pg != pgid {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out = append(out, e.Name()+":"+strings.TrimSpace(string(comm)))
	}
	return out
}

// TestStepGroupDiesWithItsDriver: a driver killed with SIGKILL takes its
// step's whole process group with it at once: background children and the
// command a multi-line script is running, not just the step's own bash
// (the parent-death signal reaches that one only). No takeover runs here
// to clean up after it.
func TestStepGroupDiesWithItsDriver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, script string }{
		{"background children", "sleep 300 & sleep 300; wait"},
		{"multi-line script", "sleep 300\necho after\nsleep 300"},
		{"after its reaper was killed", "kill-reaper;sleep 300 & sleep 300; wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "pgid")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGroupDriver$", "-test.count=1")
			cmd.Env = append(os.Environ(), groupHelperEnv+"="+file+"\n"+tc.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var pgid int
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				if b, err := os.ReadFile(file); err == nil {
					pgid, _ = strconv.Atoi(string(b))
				}
				// Started: a sleep of the script runs in the group.
				if pgid > 0 && strings.Contains(fmt.Sprint(members(pgid)), ":sleep") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the helper's step did not start within a minute (pgid %d: %v)", pgid, members(pgid))
				}
			}
			before := members(pgid)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			killed := time.Now()
			for len(members(pgid)) > 0 {
				if time.Since(killed) > 30*time.Second {
					left := members(pgid)
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
					t.Fatalf("30 s after the driver was SIGKILLed its step's group still has %v (had %v)", left, before)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("the group %v was gone %s after its driver was killed", before, time.Since(killed).Round(time.Millisecond))
		})
	}
}

// TestReaperKillDoesNotHitTheTestGroup: the helper that kills its reaper
// signals the reaper, never pid 0. It did when its first step exited before
// being registered (no reaper started): kill(0, SIGKILL) ended its own
// process group, in one try of nine; under go test that group holds go
// test and the script that ran it, so whole loaded suites vanished without
// a line. Each try runs in its own session, so a failure kills only itself.
func TestReaperKillDoesNotHitTheTestGroup(t *testing.T) {
	t.Parallel()
	const tries, par = 40, 4
	sem := make(chan struct{}, par)
	errs := make(chan error, tries)
	for i := range tries {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			file := filepath.Join(t.TempDir(), "pgid")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGroupDriver$", "-test.count=1")
			cmd.Env = append(os.Environ(), groupHelperEnv+"="+file+"\nkill-reaper;true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("try %d: %v\n%s", i, err, out)
				return
			}
			errs <- nil
		}()
	}
	for range tries {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestFastStepsAreRegistered: a step that exits at once (`true`) is still
// registered with the reaper and reported to OnStart (a process_start
// event, which a takeover kills by): its start time is read before it can
// be reaped. Read after, one start in nine found it reaped and went
// untracked, whatever it had left running in its group included.
func TestFastStepsAreRegistered(t *testing.T) {
	t.Parallel()
	const n = 300
	missed := 0
	for range n {
		var got uint64
		if _, _, err := Run(context.Background(), Spec{Name: "true",
			OnStart: func(_ int, st uint64) { got = st }}); err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("%d of %d fast steps were not registered (no start time, no OnStart)", missed, n)
	}
}

// TestStepsWithAReaper: with the reaper, a step still reports what it
// did: its output, exit code, the signal that killed it, a timeout; its
// stdin is empty and it does not see the reaper's marker (a switchyard run
// by a step is not a reaper).
func TestStepsWithAReaper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var group int
	out, errText, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c",
		`echo "out $(cat | wc -c)"; echo err >&2; env | grep -c ` + reaperEnv + ` || true; ps -o pgid= -p $$ | tr -d ' '`},
		OnStart: func(pgid int, _ uint64) { group = pgid }})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("out 0\n0\n%d", group); out != want || errText != "err\n" {
		t.Errorf("stdout %q (want %q), stderr %q", out, want, errText)
	}
	var pe *Error
	if _, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "exit 3"}}); !errors.As(err, &pe) || pe.ExitCode != 3 || pe.Signal != "" {
		t.Errorf("exit 3: %v", err)
	}
	if _, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "kill -TERM $$"}}); !errors.As(err, &pe) || pe.Signal != syscall.SIGTERM.String() {
		t.Errorf("killed by SIGTERM: %v", err)
	}
	if _, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "kill -TERM 0; sleep 5"}}); !errors.As(err, &pe) || pe.Signal != syscall.SIGTERM.String() {
		t.Errorf("kill 0 (the whole group): %v", err)
	}
	if _, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "sleep 30 & sleep 30"}, Timeout: 300 * time.Millisecond}); !errors.As(err, &pe) || pe.Timeout == 0 {
		t.Errorf("timeout: %v", err)
	}
	if _, _, err := Run(ctx, Spec{Name: "no-such-command-here"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing command: %v", err)
	}
	if _, _, err := Run(ctx, Spec{Name: "bash", Args: []string{"-c", "true"}, Dir: "/no/such/dir"}); err == nil {
		t.Error("a missing working directory was not an error")
	}
	cctx, cancel := context.WithCancel(ctx)
	started := make(chan int, 1)
	go func() {
		_, _, err := Run(cctx, Spec{Name: "bash", Args: []string{"-c", "sleep 30 & sleep 30"},
			OnStart: func(pgid int, _ uint64) { started <- pgid }})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
		close(started)
	}()
	pgid := <-started
	cancel()
	<-started
	if left := members(pgid); len(left) > 0 {
		t.Errorf("a cancelled step left %v", left)
	}
}

// TestReaperEnvironmentHoldsNoSecrets: the reaper lives beside the steps,
// which may read any process of the user's environment: it starts with
// nothing of the driver's.
func TestReaperEnvironmentHoldsNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-reaper-must-not-see-this")
	reaper.mu.Lock()
	old := reaper.pid
	if reaper.w != nil { // a reaper started earlier: the next step starts another
		reaper.w.Close()
		reaper.w = nil
	}
	broken := reaper.broken
	reaper.mu.Unlock()
	if broken {
		t.Skip("no reaper runs here")
	}
	pid := liveReaper(t, old)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-reaper") || strings.Contains(string(b), "OPENAI") {
		t.Errorf("the reaper's environment holds the driver's: %q", b)
	}
}
