package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRootEscapeErrorText pins the text isEscape matches: os does not
// export the error os.Root returns for a path that leaves the root.
func TestRootEscapeErrorText(t *testing.T) {
	t.Parallel()
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Open("../x")
	if !isEscape(err) {
		t.Fatalf("os.Root escape error %v is not recognised", err)
	}
	if isEscape(errors.New("path escapes from parent")) || isEscape(os.ErrNotExist) {
		t.Fatal("isEscape matched a plain error")
	}
}

// TestPathEscapes: every file tool refuses, naming the path, paths that
// end outside the roots: ".." climbs, absolute paths elsewhere, and
// symlinks (to a file or a folder) that point out. Nothing outside is read
// or written.
func TestPathEscapes(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	secret := put(t, filepath.Join(te.out, "secret.txt"), "SECRET\n")
	symlink(t, secret, filepath.Join(te.ws, "filelink"))
	symlink(t, te.out, filepath.Join(te.ws, "dirlink"))
	symlink(t, "../outside/secret.txt", filepath.Join(te.ws, "rellink"))
	put(t, filepath.Join(te.ws, "sub", "ok.txt"), "fine\n")
	symlink(t, "../../outside", filepath.Join(te.ws, "sub", "deeplink"))

	paths := []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		secret,
		"/etc/passwd",
		"filelink",
		"rellink",
		"dirlink/secret.txt",
		filepath.Join(te.ws, "dirlink", "secret.txt"),
		"sub/deeplink/secret.txt",
		"dirlink/new.txt",
	}
	for _, p := range paths {
		calls := map[string]map[string]any{
			"Read":  {"file_path": p},
			"Write": {"file_path": p, "content": "OVERWRITTEN"},
			"Edit":  {"file_path": p, "old_string": "SECRET", "new_string": "OVERWRITTEN"},
			"Grep":  {"pattern": "SECRET", "path": p},
		}
		for tool, args := range calls {
			t.Run(tool+" "+p, func(t *testing.T) {
				r := call(t, te.Env, tool, args)
				mustErr(t, r, tool+":", p, "outside the workspace")
				if strings.Contains(r.Output, "SECRET\n") {
					t.Fatalf("leaked: %s", r.Output)
				}
			})
		}
	}
	for _, p := range []string{"..", "../outside", te.out, "dirlink", "sub/deeplink", "/"} {
		for tool, args := range map[string]map[string]any{
			"LS":   {"path": p},
			"Glob": {"pattern": "*", "path": p},
			"Grep": {"pattern": "SECRET", "path": p},
		} {
			t.Run(tool+" "+p, func(t *testing.T) {
				mustErr(t, call(t, te.Env, tool, args), tool+":", "outside the workspace")
			})
		}
	}
	if got := readFile(t, secret); got != "SECRET\n" {
		t.Fatalf("secret changed: %q", got)
	}
	ents, _ := os.ReadDir(te.out)
	if len(ents) != 1 {
		t.Fatalf("outside folder holds %d entries, want 1", len(ents))
	}
	// Walks list a link that points out but never follow it.
	out := mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "SECRET"}))
	if out != "No files found" {
		t.Fatalf("Grep followed a link out: %s", out)
	}
	out = mustOK(t, call(t, te.Env, "Glob", map[string]any{"pattern": "**/secret.txt"}))
	if out != "No files found" {
		t.Fatalf("Glob followed a link out: %s", out)
	}
}

// TestPathsInside: links and roots that resolve beneath a root work: a
// relative and an absolute link inside the workspace, a link from the
// workspace into the second root, a path in the second root, a root named
// through a symlink, and a workspace-relative path that climbs and comes
// back.
func TestPathsInside(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	target := put(t, filepath.Join(te.ws, "real", "t.txt"), "inside\n")
	put(t, filepath.Join(te.art, "a.txt"), "artifact\n")
	symlink(t, "real/t.txt", filepath.Join(te.ws, "rel"))
	symlink(t, target, filepath.Join(te.ws, "abs"))
	symlink(t, filepath.Join(te.art, "a.txt"), filepath.Join(te.ws, "toart"))
	symlink(t, "real", filepath.Join(te.ws, "dirlink"))
	wsLink := filepath.Join(filepath.Dir(te.ws), "wslink")
	symlink(t, te.ws, wsLink)

	for p, want := range map[string]string{
		"rel":                                 "inside",
		"abs":                                 "inside",
		"dirlink/t.txt":                       "inside",
		"toart":                               "artifact",
		filepath.Join(te.art, "a.txt"):        "artifact",
		filepath.Join(wsLink, "real/t.txt"):   "inside",
		"../ws/real/t.txt":                    "inside",
		filepath.Join(te.ws, "real", "t.txt"): "inside",
	} {
		out := mustOK(t, call(t, te.Env, "Read", map[string]any{"file_path": p}))
		if out != "     1\t"+want {
			t.Fatalf("Read %s = %q", p, out)
		}
	}
	// A root given through a symlink, and paths named either way.
	env := &Env{Roots: []string{wsLink}}
	for _, p := range []string{"real/t.txt", filepath.Join(te.ws, "real/t.txt"), filepath.Join(wsLink, "real/t.txt")} {
		mustOK(t, call(t, env, "Read", map[string]any{"file_path": p}))
	}
	// Writing through links writes their targets and keeps the links.
	mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": "abs", "content": "via abs\n"}))
	mustOK(t, call(t, te.Env, "Edit", map[string]any{"file_path": "toart", "old_string": "artifact", "new_string": "edited"}))
	if got := readFile(t, target); got != "via abs\n" {
		t.Fatalf("target = %q", got)
	}
	if got := readFile(t, filepath.Join(te.art, "a.txt")); got != "edited\n" {
		t.Fatalf("artifact = %q", got)
	}
	for _, l := range []string{"abs", "toart"} {
		if fi, err := os.Lstat(filepath.Join(te.ws, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a link: %v", l, err)
		}
	}
	// No roots: a clear error, not a panic.
	mustErr(t, call(t, &Env{}, "Read", map[string]any{"file_path": "x"}), "no workspace folder")
	mustErr(t, call(t, nil, "Bash", map[string]any{"command": "true"}), "no workspace folder")
}

// TestWriteRaceFolderSwap: a folder swapped for a symlink to the outside
// while Write runs, over and over, never lets a write land outside.
func TestWriteRaceFolderSwap(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	d := filepath.Join(te.ws, "d")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.RemoveAll(d)
			_ = os.Symlink(te.out, d)
			_ = os.Remove(d)
			_ = os.Mkdir(d, 0o755)
		}
	}()
	ok := 0
	for i := range 300 {
		for _, tool := range []string{"Write", "Edit"} {
			args := map[string]any{"file_path": "d/f.txt", "content": "x"}
			if tool == "Edit" {
				args = map[string]any{"file_path": "d/f.txt", "old_string": "x", "new_string": "y"}
			}
			r := call(t, te.Env, tool, args)
			if !r.IsError {
				ok++
			}
			_ = i
		}
	}
	close(stop)
	wg.Wait()
	ents, err := os.ReadDir(te.out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("writes landed outside the workspace: %v", ents)
	}
	t.Logf("%d of 600 calls succeeded while the folder was swapped", ok)
	// Without the race, the same call works.
	_ = os.RemoveAll(d)
	mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": "d/f.txt", "content": "x"}))
}

// TestWriteRaceFileSwap: the file itself swapped for a symlink to an
// outside file while Write and Edit run never changes the outside file.
func TestWriteRaceFileSwap(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	victim := put(t, filepath.Join(te.out, "victim.txt"), "x original\n")
	f := filepath.Join(te.ws, "f.txt")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(te.ws, "tmplink")
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Symlink(victim, tmp)
			_ = os.Rename(tmp, f) // atomically: f is now a link out
			_ = os.Remove(f)
			_ = os.WriteFile(f, []byte("x\n"), 0o644)
		}
	}()
	for range 300 {
		call(t, te.Env, "Write", map[string]any{"file_path": "f.txt", "content": "x written\n"})
		call(t, te.Env, "Edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y"})
	}
	close(stop)
	wg.Wait()
	if got := readFile(t, victim); got != "x original\n" {
		t.Fatalf("the outside file was changed: %q", got)
	}
	ents, _ := os.ReadDir(te.out)
	if len(ents) != 1 {
		t.Fatalf("outside folder holds %d entries", len(ents))
	}
}
