package proc

// The sandbox on Linux (see sandbox.go for what it is for).
//
// StartLocked starts a sandboxed command as this binary (/proc/self/exe),
// cloned into a new user namespace (this user mapped to itself, nothing
// else) and a new mount namespace, with sandboxEnv describing what to
// hide. package proc's init turns that process into the sandbox's
// builder before anything else of the program runs (after the start
// gate's wait, when the step is gated): it makes every mount private,
// covers each hidden folder with an empty tmpfs and each hidden file with
// /dev/null, mounts the process's own folders back (held open before they
// were covered), makes the tmpfs read-only, drops every capability
// (bounding set included: it is root in its namespace until then, and a
// process with CAP_SYS_ADMIN there could unmount what hides) and execs
// the real command in place. The pid, the process group and the start
// time stay those StartLocked registered with the reaper.
//
// Nor can a node reach the files through another process: /proc/PID/root,
// cwd, environ and mem of a process outside its user namespace are
// refused to it (the kernel grants them within one user namespace, or
// with CAP_SYS_PTRACE over the other's), even for a dumpable process of
// the same user. What it still sees: /proc lists every process of the
// machine, with their command lines.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sandboxEnv holds the sandbox's spec (JSON) of a process to sandbox.
const sandboxEnv = "SWITCHYARD_STEP_SANDBOX"

// sandboxProbeEnv makes the sandbox's builder exit 0 once the sandbox is
// built instead of running a command (SetSandbox's probe).
const sandboxProbeEnv = "SWITCHYARD_SANDBOX_PROBE"

// sandboxExit is the builder's status when it could not build the
// sandbox: the command never ran.
const sandboxExit = 125

// sandboxSpec is what the builder is told.
type sandboxSpec struct {
	Hide []string `json:"hide"`
	// Folders holds the device and inode of each hidden folder when the
	// sandbox was set.
	Folders map[string][2]uint64 `json:"folders,omitempty"`
	Expose  []string             `json:"expose,omitempty"`
	Dir     string               `json:"dir,omitempty"`
}

// folderIDs records the device and inode of each folder of paths.
func folderIDs(paths []string) map[string][2]uint64 {
	ids := map[string][2]uint64{}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ids[p] = [2]uint64{st.Dev, st.Ino}
		}
	}
	return ids
}

// sandboxed rewrites cmd to start in the current sandbox, exposing its
// Dir and expose; a no-op without a sandbox. When gated is set, cmd was
// already rewritten to start behind the start gate (this binary too),
// which builds the sandbox once released.
func sandboxed(cmd *exec.Cmd, expose []string, gated bool) error {
	sb := currentSandbox()
	if sb == nil {
		return nil
	}
	dir := ""
	if cmd.Dir != "" {
		d, err := cleanPaths([]string{cmd.Dir})
		if err != nil {
			return err
		}
		dir = d[0]
		if slices.Contains(sb.Hide, dir) {
			return fmt.Errorf("%s is hidden from steps, and cannot be a step's folder (is it Switchyard's data folder?)", cmd.Dir)
		}
		expose = append([]string{cmd.Dir}, expose...)
	}
	ex, err := cleanPaths(expose)
	if err != nil {
		return err
	}
	spec, err := json.Marshal(sandboxSpec{Hide: sb.Hide, Folders: sb.folders, Expose: exposed(sb.Hide, ex), Dir: dir})
	if err != nil {
		return err
	}
	env := append(cmd.Environ(), sandboxEnv+"="+string(spec))
	if !gated {
		cmd.Args = append([]string{"switchyard-sandbox", cmd.Path}, cmd.Args...)
		cmd.Path = "/proc/self/exe"
	}
	cmd.Env = env
	attr := syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	inNamespaces(&attr)
	cmd.SysProcAttr = &attr
	return nil
}

// inNamespaces has a child start in a user namespace of its own, where
// this user is itself (files keep their owners), and a mount namespace
// of its own. The child has every capability in its namespace, but exec
// drops them for a user other than root: the two the builder needs
// (mounting, and dropping the bounding set) are passed through exec as
// ambient capabilities, which it drops before the command's exec.
func inNamespaces(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
}

// probeSandbox builds sb once in a child that then exits, and returns why
// it could not.
func probeSandbox(sb *Sandbox) error {
	if !canGate() {
		return fmt.Errorf("%w: /proc/self/exe is not this binary's file", ErrNoSandbox)
	}
	spec, err := json.Marshal(sandboxSpec{Hide: sb.Hide, Folders: sb.folders})
	if err != nil {
		return err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"switchyard-sandbox-probe"}
	cmd.Env = []string{sandboxEnv + "=" + string(spec), sandboxProbeEnv + "=1"}
	attr := syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	inNamespaces(&attr)
	cmd.SysProcAttr = &attr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) {
			return fmt.Errorf("%w: user namespaces refused (%v)", ErrNoSandbox, err)
		}
		return fmt.Errorf("%w: %s", ErrNoSandbox, msg)
	}
	return nil
}

// runSandbox is init's: when this process is a sandbox's builder (and not
// a gate, which builds it after its wait), it builds the sandbox and
// execs the command, or exits.
func runSandbox() {
	if _, ok := os.LookupEnv(sandboxEnv); !ok {
		return
	}
	if os.Getenv(sandboxProbeEnv) == "1" {
		runtime.LockOSThread()
		if err := enterSandbox(); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			os.Exit(sandboxExit)
		}
		os.Exit(0)
	}
	if len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "switchyard: bad sandbox start %q\n", os.Args)
		os.Exit(sandboxExit)
	}
	os.Exit(execIn(os.Args[1], os.Args[2:]))
}

// execIn builds the sandbox when this process is to start in one, then
// execs path with argv and this environment less the builder's and the
// gate's variables. It returns only when it cannot: the exit status to
// end with.
func execIn(path string, argv []string) int {
	// Capabilities, and the bounding set, are a thread's: the thread
	// that drops them must be the one that execs.
	runtime.LockOSThread()
	if err := enterSandbox(); err != nil {
		fmt.Fprintf(os.Stderr, "switchyard: %v\n", err)
		return sandboxExit
	}
	env := os.Environ()
	kept := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, gateEnv+"=") && !strings.HasPrefix(kv, sandboxEnv+"=") && !strings.HasPrefix(kv, sandboxProbeEnv+"=") {
			kept = append(kept, kv)
		}
	}
	err := syscall.Exec(path, argv, kept)
	// As a shell reports a command it cannot run: 127 not found, 126
	// found but not executable.
	fmt.Fprintf(os.Stderr, "switchyard: exec %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// enterSandbox builds the sandbox sandboxEnv describes (nothing when it
// is not set). It runs in the new namespaces, on the thread that execs.
func enterSandbox() error {
	v, ok := os.LookupEnv(sandboxEnv)
	if !ok {
		return nil
	}
	var s sandboxSpec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return fmt.Errorf("sandbox: bad spec: %w", err)
	}
	// Nothing mounted here may reach the namespace it was copied from.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: make mounts private: %w", err)
	}
	// Hold the folders to mount back before they are covered.
	type held struct {
		path string
		fd   int
		dir  bool
	}
	var keep []held
	defer func() {
		for _, k := range keep {
			_ = unix.Close(k.fd)
		}
	}()
	for _, e := range s.Expose {
		fd, err := unix.Open(e, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone: nothing to mount back
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			continue
		}
		keep = append(keep, held{path: e, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	var covers []string // the tmpfs mounts, made read-only at the end
	for _, h := range s.Hide {
		if err := hidePath(h, s.Folders[h], &covers); err != nil {
			return err
		}
	}
	for _, k := range keep {
		if k.dir {
			if err := os.MkdirAll(k.path, 0o755); err != nil {
				return fmt.Errorf("sandbox: mount back %s: %w", k.path, err)
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(k.path), 0o755); err != nil {
				return fmt.Errorf("sandbox: mount back %s: %w", k.path, err)
			}
			if f, err := os.OpenFile(k.path, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		src := "/proc/self/fd/" + strconv.Itoa(k.fd)
		if err := unix.Mount(src, k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("sandbox: mount back %s: %w", k.path, err)
		}
	}
	// A hidden path inside a folder mounted back (a token file in the
	// workspace) is hidden again, on top.
	for _, h := range s.Hide {
		for _, k := range keep {
			if h != k.path && within(h, k.path) {
				if err := hidePath(h, s.Folders[h], &covers); err != nil {
					return err
				}
				break
			}
		}
	}
	for _, c := range covers {
		if err := unix.Mount("", c, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("sandbox: make %s read-only: %w", c, err)
		}
	}
	if s.Dir != "" {
		// Entered before the mounts: enter it again, through them.
		if err := unix.Chdir(s.Dir); err != nil {
			return fmt.Errorf("sandbox: enter %s: %w", s.Dir, err)
		}
	}
	return dropCapabilities()
}

// hidePath covers h: an empty tmpfs on a folder, /dev/null on anything
// else. A path that does not exist is left alone. A folder that was there
// when the sandbox was set (id, its device and inode) must still be what
// h names: a step that renamed a folder above it (the data folder's
// parent, where that is the user's) would otherwise have the next steps
// hide a new, empty folder at the old path while the database lives on
// under the new one, in plain sight. The check and the mount are on one
// open file, so nothing can swap the folder between them.
func hidePath(h string, id [2]uint64, covers *[]string) error {
	fd, err := unix.Open(h, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			if id != ([2]uint64{}) {
				return fmt.Errorf("sandbox: %s, hidden from steps, is gone (moved?): no step starts until the server restarts", h)
			}
			return nil
		}
		return fmt.Errorf("sandbox: hide %s: %w", h, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox: hide %s: %w", h, err)
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if id != ([2]uint64{}) && (!dir || id != [2]uint64{st.Dev, st.Ino}) {
		return fmt.Errorf("sandbox: %s, hidden from steps, is no longer the folder it was (moved or replaced): no step starts until the server restarts", h)
	}
	target := "/proc/self/fd/" + strconv.Itoa(fd)
	if dir {
		if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
			return fmt.Errorf("sandbox: hide %s: %w", h, err)
		}
		*covers = append(*covers, h)
		return nil
	}
	if err := unix.Mount("/dev/null", target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("sandbox: hide %s: %w", h, err)
	}
	return nil
}

// dropCapabilities leaves the thread no capability now or after exec:
// bounding set, ambient and inheritable sets emptied, then the rest. A
// root server's nodes are root in their namespace, and would otherwise
// keep every capability there across exec (CAP_SYS_ADMIN unmounts what
// hides); no new privileges can be gained either.
func dropCapabilities() error {
	for c := 0; ; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) && c > 0 {
				break // past the last capability
			}
			return fmt.Errorf("sandbox: drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sandbox: clear ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no new privileges: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: drop capabilities: %w", err)
	}
	return nil
}
