package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sandboxFixture is a data folder holding a database, a run's workspace
// and artifacts, another run's workspace, and a token file beside it.
type sandboxFixture struct {
	data, db, work, art, other, token string
}

func newSandboxFixture(t testing.TB) sandboxFixture {
	t.Helper()
	root := t.TempDir()
	f := sandboxFixture{
		data:  filepath.Join(root, "data"),
		token: filepath.Join(root, "token"),
	}
	f.db = filepath.Join(f.data, "switchyard.db")
	f.work = filepath.Join(f.data, "workspaces", "run-1")
	f.art = filepath.Join(f.data, "artifacts", "run-1")
	f.other = filepath.Join(f.data, "workspaces", "run-2")
	for _, d := range []string{f.work, f.art, f.other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, text := range map[string]string{
		f.db: "SECRET-DATABASE", f.db + "-wal": "SECRET-WAL", f.token: "SECRET-TOKEN",
		filepath.Join(f.other, "notes.txt"): "SECRET-OTHER-RUN", filepath.Join(f.work, "mine.txt"): "my own file",
	} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sandboxOn turns the sandbox on for the test, hiding f's data folder and
// token file. It fails the test where the machine cannot sandbox: the
// sandbox is what keeps nodes from the server's secrets.
func sandboxOn(t *testing.T, f sandboxFixture) {
	t.Helper()
	if err := SetSandbox(&Sandbox{Hide: []string{f.data, f.token}}); err != nil {
		t.Fatalf("SetSandbox: %v", err)
	}
	t.Cleanup(func() { _ = SetSandbox(nil) })
}

// inSandboxes runs test once per way a step is held (ptrace stop, start
// gate), each time with a fresh fixture and the sandbox on. Not parallel:
// it sets the package's hold mode and sandbox.
func inSandboxes(t *testing.T, test func(t *testing.T, f sandboxFixture)) {
	for name, how := range holds(t) {
		t.Run(name, func(t *testing.T) {
			holdMode = how
			defer func() { holdMode = -1 }()
			f := newSandboxFixture(t)
			sandboxOn(t, f)
			test(t, f)
		})
	}
}

// TestSandboxHidesTheServersFiles: a node's process, started in its run's
// workspace under the data folder, reads and writes its workspace and its
// artifacts as ever, but sees the data folder otherwise empty: no
// database, no other run's workspace; the token file reads empty; and it
// cannot unmount what hides them, directly, from a namespace of its own,
// or as root in its namespace; nor reach them through /proc/PID/root of a
// process of the same user outside it. Run once per way a step is held (ptrace
// stop, start gate). Not parallel: it sets the package's sandbox.
func TestSandboxHidesTheServersFiles(t *testing.T) {
	inSandboxes(t, func(t *testing.T, f sandboxFixture) {
		script := `
cat ../../switchyard.db ../../switchyard.db-wal ../run-2/notes.txt 2>/dev/null
echo "data: $(cd ../.. && ls -A | tr '\n' ' ')"
echo "workspaces: $(ls -A .. | tr '\n' ' ')"
echo "token: [$(cat "$TOKEN")]"
echo "mine: $(cat mine.txt)"
echo written > out.txt && echo made > "$ART/a.txt"
umount "$DATA" 2>/dev/null || echo "umount refused"
unshare -Um sh -c 'echo "nested: in"; umount -l "$DATA" && cat "$DATA/switchyard.db"' 2>/dev/null || echo "nested umount refused"
cat "/proc/$OUTSIDE/root$DATA/switchyard.db" 2>/dev/null || echo "outside root refused"
cat "/proc/$OUTSIDE/environ" 2>/dev/null || echo "outside environ refused"
grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status | tr '\t' ' '
echo "pwd: $PWD"
`
		// A process of the same user outside the sandbox, dumpable:
		// its /proc/PID/root leads to the files as they are.
		outside := exec.Command("sleep", "120")
		outside.Env = []string{"SECRET_ENV=SECRET-OUTSIDE"}
		if err := outside.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
		env := []string{"PATH=" + os.Getenv("PATH"), "DATA=" + f.data, "TOKEN=" + f.token, "ART=" + f.art,
			"OUTSIDE=" + strconv.Itoa(outside.Process.Pid)}
		out, stderr, err := Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", script},
			Dir: f.work, Env: env, Expose: []string{f.art}})
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if strings.Contains(out, "SECRET") {
			t.Errorf("the sandboxed step read a secret:\n%s", out)
		}
		for _, want := range []string{
			"data: artifacts workspaces \n", // only the mount points of its own folders
			"workspaces: run-1 \n",
			"token: []\n",
			"mine: my own file\n",
			"umount refused\n",
			"nested: in\n", "nested umount refused\n",
			"outside root refused\n", "outside environ refused\n",
			"CapEff: 0000000000000000\n", "CapPrm: 0000000000000000\n", "CapBnd: 0000000000000000\n",
			"pwd: " + f.work,
		} {
			if !strings.Contains(out+"\n", want) {
				t.Errorf("missing %q in what the step saw:\n%s", want, out)
			}
		}
		for p, want := range map[string]string{filepath.Join(f.work, "out.txt"): "written\n", filepath.Join(f.art, "a.txt"): "made\n"} {
			if b, err := os.ReadFile(p); err != nil || string(b) != want {
				t.Errorf("%s after the step: %q, %v", p, b, err)
			}
		}
		// Files written in the sandbox belong to the server's user.
		if st, err := os.Stat(filepath.Join(f.work, "out.txt")); err == nil {
			if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
				t.Errorf("out.txt belongs to uid %d, not %d", uid, os.Geteuid())
			}
		}
		// Outside the sandbox nothing changed.
		if b, err := os.ReadFile(f.db); err != nil || string(b) != "SECRET-DATABASE" {
			t.Errorf("the database after the step: %q, %v", b, err)
		}
	})
}

// TestSandboxedStepsRunAsStarted: in the sandbox a step's exit status,
// the signal that killed it, its timeout (its whole group killed), its
// stdin and its pid and start time registered are what they are without.
func TestSandboxedStepsRunAsStarted(t *testing.T) {
	inSandboxes(t, func(t *testing.T, f sandboxFixture) {
		env := []string{"PATH=" + os.Getenv("PATH")}
		var pe *Error
		if _, _, err := Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", "exit 7"}, Env: env}); !errors.As(err, &pe) || pe.ExitCode != 7 {
			t.Errorf("exit 7: %v", err)
		}
		if _, _, err := Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", "kill -INT $$; sleep 5"}, Env: env}); !errors.As(err, &pe) || pe.Signal != syscall.SIGINT.String() {
			t.Errorf("killed by SIGINT: %v", err)
		}
		var pid int
		var start uint64
		out, _, err := Run(context.Background(), Spec{Name: "bash", Args: []string{"-c", `echo "$$ $(cat)"; env | grep -c '^SWITCHYARD_' || true`}, Env: env,
			Stdin: strings.NewReader("from stdin"), Dir: f.work, OnStart: func(p int, st uint64) { pid, start = p, st }})
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(out)
		if len(fields) != 4 || fields[1] != "from" || fields[3] != "0" {
			t.Errorf("the step printed %q: want its pid, its stdin and no SWITCHYARD_ variable", out)
		}
		if len(fields) > 0 && fields[0] != strconv.Itoa(pid) {
			t.Errorf("the step's pid %s is not the one registered, %d", fields[0], pid)
		}
		if start == 0 {
			t.Error("no start time registered")
		}
		// A timeout kills the group, a background child included. The
		// step must have started its child and written its pid before the
		// timeout: on a loaded machine bash (traced, in the trace sandbox)
		// can take longer than half a second to get there, so the timeout
		// doubles until it does. The kill is what is tested.
		pidfile := filepath.Join(f.work, "child")
		child := ""
		for timeout := 500 * time.Millisecond; child == "" && timeout <= 32*time.Second; timeout *= 2 {
			os.Remove(pidfile)
			_, _, err = Run(context.Background(), Spec{Name: "bash", Dir: f.work, Env: env, Timeout: timeout,
				Args: []string{"-c", `sleep 60 & echo $! > child.tmp && mv child.tmp child; wait`}})
			if !errors.As(err, &pe) || pe.Timeout == 0 {
				t.Fatalf("timeout: %v", err)
			}
			b, _ := os.ReadFile(pidfile)
			child = strings.TrimSpace(string(b))
		}
		deadline := time.Now().Add(30 * time.Second)
		for child != "" && running(mustAtoi(child)) {
			if time.Now().After(deadline) {
				t.Fatalf("the step's background child %s outlived its timeout", child)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if child == "" {
			t.Error("the step wrote no child pid")
		}
	})
}

// TestSandboxExposesOnlyWhatIsInsideHiddenFolders: the folders mounted
// back are those strictly inside a hidden one; a hidden folder itself
// stays hidden when named as a workspace.
func TestSandboxExposesOnlyWhatIsInsideHiddenFolders(t *testing.T) {
	t.Parallel()
	hide := []string{"/d", "/t/token"}
	for _, c := range []struct {
		expose, want []string
	}{
		{[]string{"/d/w/1", "/d/a/1"}, []string{"/d/w/1", "/d/a/1"}},
		{[]string{"/d"}, nil},
		{[]string{"/repo", "/"}, nil},
		{[]string{"/dd/x", "/d/x", "/d/x"}, []string{"/d/x"}},
	} {
		if got := exposed(hide, c.expose); !slices.Equal(got, c.want) {
			t.Errorf("exposed(%q) = %q, want %q", c.expose, got, c.want)
		}
	}
}

// TestSandboxOffRunsAsEver: without SetSandbox (or after SetSandbox(nil))
// a step sees the files as they are.
func TestSandboxOffRunsAsEver(t *testing.T) {
	f := newSandboxFixture(t)
	sandboxOn(t, f)
	if err := SetSandbox(nil); err != nil {
		t.Fatal(err)
	}
	out, _, err := Run(context.Background(), Spec{Name: "cat", Args: []string{f.db}})
	if err != nil || out != "SECRET-DATABASE" {
		t.Errorf("cat without the sandbox: %q, %v", out, err)
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestSandboxForAUserOtherThanRoot: run as root (as CI is), the tests
// above miss what differs for everyone else (exec drops a non-root
// user's capabilities in its namespace, which the sandbox's builder
// needs): they run again as nobody.
func TestSandboxForAUserOtherThanRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the tests above already run as a user other than root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// nobody must reach the test binary: a copy in a folder of its own.
	dir, err := os.MkdirTemp("", "sandbox-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "proc.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^(TestSandboxHidesTheServersFiles|TestSandboxedStepsRunAsStarted)$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestSandboxHidesTheServersFiles/gate", "--- PASS: TestSandboxedStepsRunAsStarted/gate"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("as nobody, no %q:\n%s", want, out)
		}
	}
}

// TestSandboxRefusesAMovedDataFolder: a step renames the folder above the
// data folder (its to write, as a user's home is) and makes a new, empty
// data folder in its place. The steps that follow would hide the new one
// and see the database under the new name: they are refused instead,
// naming the folder, and run nothing.
func TestSandboxRefusesAMovedDataFolder(t *testing.T) {
	f := newSandboxFixture(t)
	sandboxOn(t, f)
	parent := filepath.Dir(f.data)
	moved := parent + ".moved"
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	env := []string{"PATH=" + os.Getenv("PATH")}
	out, stderr, err := Run(context.Background(), Spec{Name: "bash", Env: env,
		Args: []string{"-c", `mv "$0" "$1" && mkdir -p "$0/data" && echo moved`, parent, moved}})
	if err != nil || out != "moved" {
		t.Fatalf("the step that moves the folder: %q %v\n%s", out, err, stderr)
	}
	out, stderr, err = Run(context.Background(), Spec{Name: "bash", Env: env,
		Args: []string{"-c", `cat "$0/data/switchyard.db"`, moved}})
	if strings.Contains(out, "SECRET") {
		t.Fatalf("a step read the moved database: %q", out)
	}
	if err == nil || !strings.Contains(stderr, f.data+", hidden from steps, is no longer the folder it was") {
		t.Errorf("a step after the move: %q, %v\n%s", out, err, stderr)
	}
}
