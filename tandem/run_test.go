package tandem

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// runDevice runs d.Run until the test ends and checks that it returned.
func runDevice(t *testing.T, d *Device) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(realtest.Scale(10 * time.Second)):
			t.Error("Run did not return after its context ended")
		}
	}
}

// waitFor polls cond until it holds or the deadline passes (within,
// scaled for a busy machine: realtest.Scale).
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	within = realtest.Scale(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two devices running Run see each other's writes without calling Sync,
// and no goroutine is left once Run has returned and the devices closed.
func TestRunKeepsDevicesInSync(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Store: memStore(srv)})
	c, _ := a.NewCollection("Live")
	syncT(t, a)
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	stopA, stopB := runDevice(t, a), runDevice(t, b)
	waitFor(t, "B online", 5*time.Second, func() bool { return b.Status().Online })
	changed := b.Changed()
	id, err := a.NewRecord(c, map[string][]byte{"title": []byte("pushed")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(realtest.Scale(5 * time.Second)):
		t.Fatal("B was not notified of A's write")
	}
	waitFor(t, "B holds A's write", 5*time.Second, func() bool {
		r, err := b.Record(c, id)
		return err == nil && r.Get("title") == "pushed"
	})
	if st := a.Status(); st.Pending != 0 || st.LastSync.IsZero() {
		t.Errorf("A's status after Run published: %+v", st)
	}
	stopA()
	stopB()
	a.Close()
	b.Close()
	waitFor(t, "goroutines to end", 5*time.Second, func() bool { return runtime.NumGoroutine() <= base })
}

// Run on a device whose hub is down keeps trying and never returns an
// error; ending its context ends it.
func TestRunSurvivesHubDown(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "d"), Options{Hub: IMAPHub("127.0.0.1", 1, "u", "p")})
	defer d.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	if err := d.Run(ctx); err != nil {
		t.Fatalf("Run with the hub down = %v, want nil at the end of its context", err)
	}
	if st := d.Status(); !st.Offline || st.Online {
		t.Fatalf("status with the hub down: %+v", st)
	}
}
