//go:build linux

package yamldir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// swapper keeps exchanging the folder sub (a real folder inside the
// workflows folder) with a symlink to outside (renameat2 RENAME_EXCHANGE:
// sub always exists), until stop is closed: a path checked while sub is
// real is written while it is the symlink, unless every step of the write
// stays beneath the folder.
func swapper(t *testing.T, dir, outside string, stop <-chan struct{}) (wait func()) {
	t.Helper()
	sub, link := filepath.Join(dir, "sub"), filepath.Join(dir, "sub.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Skip(err)
	}
	exchange := func() error {
		return unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
	}
	if err := exchange(); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE: %v", err)
	}
	if err := exchange(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				if n%2 == 1 { // leave sub the real folder
					_ = exchange()
				}
				return
			default:
			}
			if err := exchange(); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			// Each state lasts a moment: a check and a write must see
			// different ones (a fixed implementation never writes outside,
			// however they fall).
			for range 200 {
				runtime.Gosched()
			}
		}
	}()
	return wg.Wait
}

// outsideUntouched fails t if anything in outside changed: want is its
// only file's text.
func outsideUntouched(t *testing.T, outside, want string) {
	t.Helper()
	ents, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "flow.yaml" {
		t.Errorf("files outside the workflows folder: %v (want only flow.yaml)", names)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "flow.yaml")); err != nil || string(b) != want {
		t.Errorf("a file outside the workflows folder was written: %q (%v)", b, err)
	}
}

// TestSaveSwapRaceStaysInside: saves of sub/flow.yaml while sub is swapped
// with a symlink to a folder outside (holding a file with the same text,
// so the base hash matches there too) never write outside.
func TestSaveSwapRaceStaysInside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(dir, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "flow.yaml"), []byte(flow), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	wait := swapper(t, dir, outside, stop)
	id := WorkflowID("sub/flow.yaml")
	other := flow + "# edited\n"
	var saves, escaped atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1500 && escaped.Load() == 0; i++ {
				cur, err := f.Source(ctx, id)
				if err != nil {
					continue
				}
				src := other
				if string(cur) == other {
					src = flow
				}
				if _, _, err := f.Save(ctx, id, Hash(cur), []byte(src), nil); err == nil {
					saves.Add(1)
				}
				if b, _ := os.ReadFile(filepath.Join(outside, "flow.yaml")); string(b) != flow {
					escaped.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	wait()
	t.Logf("%d saves went through", saves.Load())
	outsideUntouched(t, outside, flow)
}

// TestCreateSwapRaceStaysInside: creates under sub while sub is swapped
// with a symlink to outside never create a file outside.
func TestCreateSwapRaceStaysInside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "flow.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	wait := swapper(t, dir, outside, stop)
	var created atomic.Int64
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1500; i++ {
				if _, err := f.Create(ctx, fmt.Sprintf("sub/new-%d-%d.yaml", g, i), []byte(flow)); err == nil {
					created.Add(1)
				}
				if ents, _ := os.ReadDir(outside); len(ents) != 1 {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	wait()
	t.Logf("%d creates went through", created.Load())
	outsideUntouched(t, outside, flow)
	// What was created is inside, where the listing shows it.
	ents, _ := os.ReadDir(filepath.Join(dir, "sub"))
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "new-") {
			n++
		}
	}
	if int64(n) != created.Load() {
		t.Errorf("%d creates succeeded, %d files in sub", created.Load(), n)
	}
}

// TestSwapBeforeWriteStaysInside: the race made deterministic: sub is
// exchanged with a symlink to outside exactly between a save's (or a
// create's) checks and its write. The write fails; nothing lands outside.
func TestSwapBeforeWriteStaysInside(t *testing.T) {
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(dir, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "flow.yaml"), []byte(flow), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub, link := filepath.Join(dir, "sub"), filepath.Join(dir, "sub.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Skip(err)
	}
	exchange := func() {
		if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("renameat2 RENAME_EXCHANGE: %v", err)
		}
	}
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	testHookBeforeWrite = exchange
	t.Cleanup(func() { testHookBeforeWrite = nil })
	if _, _, err := f.Save(ctx, WorkflowID("sub/flow.yaml"), Hash([]byte(flow)), []byte(flow+"# edited\n"), nil); err == nil {
		t.Error("a save through a folder swapped for a symlink to outside succeeded")
	}
	exchange() // back: sub is the real folder
	if _, err := f.Create(ctx, "sub/new.yaml", []byte(flow)); err == nil {
		t.Error("a create through a folder swapped for a symlink to outside succeeded")
	}
	testHookBeforeWrite = nil
	exchange()
	outsideUntouched(t, outside, flow)
	if b, err := os.ReadFile(filepath.Join(sub, "flow.yaml")); err != nil || string(b) != flow {
		t.Errorf("sub/flow.yaml: %q %v", b, err)
	}
	// Unraced, both work.
	if _, _, err := f.Save(ctx, WorkflowID("sub/flow.yaml"), Hash([]byte(flow)), []byte(flow+"# edited\n"), nil); err != nil {
		t.Error(err)
	}
	if _, err := f.Create(ctx, "sub/new.yaml", []byte(flow)); err != nil {
		t.Error(err)
	}
}
