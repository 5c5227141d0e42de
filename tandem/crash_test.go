package tandem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// dovecotHub returns a Hub for a dedicated Dovecot test user, with its
// Tandem folder emptied.
func dovecotHub(t *testing.T, user string) Hub {
	t.Helper()
	addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
	var pass string
	for _, up := range strings.Fields(realtest.Getenv("FERRY_DOVECOT_USERS")) {
		if u, p, ok := strings.Cut(up, ":"); ok && u == user {
			pass = p
		}
	}
	if addr == "" || pass == "" {
		realtest.Unavailable(t, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS with user "+user+" (run scripts/setup.d/10-dovecot.sh)")
	}
	host, port, _ := strings.Cut(addr, ":")
	p, _ := strconv.Atoi(port)
	emptyFolder(t, imaphub.Config{Addr: addr, User: user, Password: pass})
	return IMAPHub(host, p, user, pass)
}

func emptyFolder(t *testing.T, cfg imaphub.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := imaphub.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("dovecot: %v", err)
	}
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]hub.ID, 0, len(ch.Added))
	for _, a := range ch.Added {
		ids = append(ids, a.ID)
	}
	if err := s.Destroy(ctx, ids); err != nil {
		t.Fatal(err)
	}
}

// TestCrashChild is the child of TestCrashSafety: it writes and syncs
// until it is killed, printing "done <record> <n>" after each write
// returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("FERRY_CRASH_DIR")
	if dir == "" {
		t.Skip("only run as TestCrashSafety's child")
	}
	d, err := Open(context.Background(), dir, Options{Logger: quiet()})
	if err != nil {
		fmt.Println("open-error", err)
		os.Exit(3)
	}
	cs := d.Collections()
	if len(cs) != 1 {
		fmt.Println("collections", len(cs))
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		n := strconv.Itoa(rand.IntN(1 << 30))
		id, err := d.NewRecord(cs[0], map[string][]byte{"n": []byte(n)})
		if err != nil {
			fmt.Fprintln(out, "write-error", err)
			out.Flush()
			os.Exit(3)
		}
		fmt.Fprintln(out, "done", id, n)
		out.Flush()
		if i%4 == 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			d.Sync(ctx)
			cancel()
		}
	}
}

// TestCrashSafety kills a writing, syncing child with SIGKILL at random
// moments, 200 times, against real Dovecot; after every kill the device
// reopens with every reported write present and the same device ID, and
// after a final sync a second device holds byte-identical state.
func TestCrashSafety(t *testing.T) {
	h := dovecotHub(t, "ivan")
	dir := filepath.Join(t.TempDir(), "dev")
	d := openT(t, dir, Options{Name: "Crash", Hub: h})
	c, err := d.NewCollection("Crash test")
	if err != nil {
		t.Fatal(err)
	}
	devID := d.DeviceID()
	key := d.ShowBackupKey()
	d.Close()

	kills := 200
	if testing.Short() {
		kills = 20
	}
	want := map[RecordID]string{}
	for i := 0; i < kills; i++ {
		done := runAndKill(t, dir, time.Duration(10+rand.IntN(250))*time.Millisecond)
		for id, n := range done {
			want[id] = n
		}
		d := openT(t, dir, Options{})
		if d.DeviceID() != devID {
			t.Fatalf("kill %d: device ID changed", i)
		}
		rs, err := d.Records(c)
		if err != nil {
			t.Fatal(err)
		}
		got := map[RecordID]string{}
		for _, r := range rs {
			got[r.ID] = r.Get("n")
		}
		for id, n := range want {
			if got[id] != n {
				t.Fatalf("kill %d: reported write %s=%s lost (have %q)", i, id, n, got[id])
			}
		}
		d.Close()
	}
	t.Logf("%d kills, %d writes reported done", kills, len(want))

	d = openT(t, dir, Options{})
	defer d.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := d.Status(); st.Pending != 0 {
		t.Fatalf("%d writes still pending after the final sync", st.Pending)
	}
	e, err := Restore(ctx, filepath.Join(t.TempDir(), "second"), key, Options{Hub: h, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := stateOf(t, d, c), stateOf(t, e, c)
	if !bytes.Equal(a, b) {
		t.Fatal("the second device's state differs from the crashed device's")
	}
	n, _ := e.Records(c)
	if len(n) < len(want) {
		t.Fatalf("second device has %d records, want at least %d", len(n), len(want))
	}
}

// runAndKill starts the child on dir, kills it after delay, and returns
// the writes it reported done.
func runAndKill(t *testing.T, dir string, delay time.Duration) map[RecordID]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FERRY_CRASH_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child ended by itself: %v\n%s", err, out.String())
	}
	done := map[RecordID]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] != "done" && f[0] != "" && (f[0] == "open-error" || f[0] == "write-error" || f[0] == "collections") {
			t.Fatalf("child: %s", line)
		}
		if len(f) == 3 && f[0] == "done" {
			id, err := ParseRecordID(f[1])
			if err != nil {
				t.Fatal(err)
			}
			done[id] = f[2]
		}
	}
	return done
}

func stateOf(t *testing.T, d *Device, c CollectionID) []byte {
	t.Helper()
	s, err := d.eng.Snapshot([16]byte(c))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
