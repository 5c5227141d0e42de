package relay_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/relay"
)

// The relay tests that need real relay processes (memory, several
// processes on one database, a kill mid-write) run this test binary again
// as the relay: FERRY_RELAY_CHILD_DB names its database.
func TestMain(m *testing.M) {
	if db := os.Getenv("FERRY_RELAY_CHILD_DB"); db != "" {
		os.Exit(runChild(db))
	}
	os.Exit(m.Run())
}

func runChild(db string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	quota, _ := strconv.ParseInt(os.Getenv("FERRY_RELAY_CHILD_QUOTA"), 10, 64)
	queue, _ := strconv.ParseInt(os.Getenv("FERRY_RELAY_CHILD_QUEUE"), 10, 64) // 0: the default
	srv, err := relay.New(ctx, relay.Config{DBPath: db, QuotaBytes: quota, QueueBytes: queue, TotalQueueBytes: queue})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("ADDR", ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	return 0
}

// child is a relay process.
type child struct {
	cmd *exec.Cmd
	url string
}

// startChild starts a relay process on db (extra: more environment), and
// ends it with the test. It fails the test if the relay does not start;
// startChildErr returns its first line instead.
func startChild(t testing.TB, db string, extra ...string) *child {
	t.Helper()
	c, line := startChildErr(t, db, extra...)
	if c == nil {
		t.Fatalf("relay process: %s", line)
	}
	return c
}

func startChildErr(t testing.TB, db string, extra ...string) (*child, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "FERRY_RELAY_CHILD_DB="+db), extra...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		} else {
			lines <- "exited without a word"
		}
		for sc.Scan() {
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("relay process did not start in 30 s")
	}
	addr, ok := strings.CutPrefix(line, "ADDR ")
	if !ok {
		cmd.Wait()
		return nil, line
	}
	c := &child{cmd: cmd, url: "ws://" + addr}
	t.Cleanup(func() { c.stop() })
	return c, line
}

// stop ends the process gracefully (SIGTERM), once.
func (c *child) stop() {
	if c.cmd.ProcessState != nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// kill ends the process at once (SIGKILL), as a crash would.
func (c *child) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// memory returns the process's resident set size and its peak, in bytes.
func (c *child) memory(t testing.TB) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}
