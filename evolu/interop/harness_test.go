package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// realEnv is what scripts/setup.d/30-evolu.sh installed.
type realEnv struct {
	Node      string // FERRY_NODE24
	ClientDir string // FERRY_EVOLU_CLIENT_DIR: @evolu/common 8.11.0
	RelayDir  string // FERRY_EVOLU_RELAY_DIR: @evolu/nodejs + common next.5
	JS        string // the Node scripts (this package's js/)
}

// repoRoot is the module root (two levels above this package).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needReal returns the installed real packages, or skips the test (fails it
// under FERRY_REQUIRE_REAL=1) when they are not installed.
func needReal(t testing.TB) realEnv {
	t.Helper()
	e := realEnv{
		Node:      realtest.Getenv("FERRY_NODE24"),
		ClientDir: realtest.Getenv("FERRY_EVOLU_CLIENT_DIR"),
		RelayDir:  realtest.Getenv("FERRY_EVOLU_RELAY_DIR"),
		JS:        filepath.Join(repoRoot(t), "evolu", "interop", "js"),
	}
	var missing []string
	for _, p := range []string{e.Node, filepath.Join(e.ClientDir, "node_modules", "@evolu", "common"),
		filepath.Join(e.RelayDir, "node_modules", "@evolu", "nodejs")} {
		if _, err := os.Stat(p); p == "" || err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		realtest.Unavailable(t, fmt.Sprintf("real Evolu packages not installed (run scripts/setup.d/30-evolu.sh): missing %q", missing))
	}
	return e
}

// nodeCmd prepares `node <script> args...` with the package directories in
// its environment.
func (e realEnv) nodeCmd(ctx context.Context, script string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.Node, append([]string{filepath.Join(e.JS, script)}, args...)...)
	cmd.Env = append(os.Environ(),
		"FERRY_EVOLU_CLIENT_DIR="+e.ClientDir,
		"FERRY_EVOLU_RELAY_DIR="+e.RelayDir,
	)
	return cmd
}

// relayProc is a relay running as its own process on 127.0.0.1.
type relayProc struct {
	URL  string // ws://127.0.0.1:port
	Port int
	cmd  *exec.Cmd
	stop func() error

	mu     sync.Mutex
	stderr bytes.Buffer
}

// PeakRSS is the process's peak resident set size (VmHWM) in bytes.
func (r *relayProc) PeakRSS() (int64, error) { return peakRSS(r.cmd.Process.Pid) }

// Stderr returns what the relay printed to stderr so far.
func (r *relayProc) Stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

func (r *relayProc) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.Write(p)
}

// Stop ends the relay (idempotent).
func (r *relayProc) Stop() error { return r.stop() }

// CPUTime is the CPU time (user + system) the relay process has used, from
// /proc/<pid>/stat, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
func (r *relayProc) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesized command name: state is field 3,
	// utime 14, stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// peakRSS reads VmHWM from /proc/<pid>/status.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// startTSRelay starts the real TypeScript relay of @evolu/nodejs
// (js/relay.mjs) in a fresh directory and waits until it listens. It checks
// that it is bound to 127.0.0.1 only. The relay stops when the test ends.
func startTSRelay(t testing.TB, e realEnv, env ...string) *relayProc {
	t.Helper()
	return startNodeRelay(t, e, "relay.mjs", env...)
}

// startTS811Relay starts the relay code of @evolu/common 8.11.0 served like
// startRelay serves it (js/relay-811.mjs).
func startTS811Relay(t testing.TB, e realEnv) *relayProc {
	t.Helper()
	return startNodeRelay(t, e, "relay-811.mjs")
}

// startNodeRelay runs a relay script of js/ that prints a ready line; env
// adds KEY=VALUE variables (FERRY_EVOLU_RELAY_QUOTA for relay.mjs).
func startNodeRelay(t testing.TB, e realEnv, script string, env ...string) *relayProc {
	t.Helper()
	return startNodeRelayIn(t, e, script, t.TempDir(), env...)
}

// startNodeRelayIn is startNodeRelay on the data directory dir, which may
// hold the database of an earlier run (a restarted relay).
func startNodeRelayIn(t testing.TB, e realEnv, script, dir string, env ...string) *relayProc {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the interop harness reads /proc")
	}
	cmd := e.nodeCmd(context.Background(), script, dir)
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &relayProc{cmd: cmd}
	cmd.Stderr = r
	if err := cmd.Start(); err != nil {
		t.Fatalf("start TS relay: %v", err)
	}
	var once sync.Once
	var stopErr error
	r.stop = func() error {
		once.Do(func() {
			stdin.Close() // the relay disposes itself on stdin EOF
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case stopErr = <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				stopErr = <-done
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = r.stop() })

	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("TS relay did not start: %s", r.Stderr())
	}
	var hello struct {
		Ready   bool   `json:"ready"`
		Address string `json:"address"`
		Port    int    `json:"port"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || !hello.Ready {
		t.Fatalf("TS relay did not start (%q): %v %s", line, err, r.Stderr())
	}
	if hello.Address != "127.0.0.1" {
		t.Fatalf("TS relay listens on %q, want 127.0.0.1 only", hello.Address)
	}
	r.Port = hello.Port
	r.URL = "ws://127.0.0.1:" + strconv.Itoa(hello.Port)
	return r
}

// tsClientResult is what js/client.mjs prints.
type tsClientResult struct {
	Count          int           `json:"count"`
	Fingerprint    string        `json:"fingerprint"`
	Rounds         int           `json:"rounds"`
	BytesSent      int64         `json:"bytesSent"`
	BytesReceived  int64         `json:"bytesReceived"`
	FramesSent     int           `json:"framesSent"`
	FramesReceived int           `json:"framesReceived"`
	Outcome        string        `json:"outcome"`
	Error          *string       `json:"error"`
	SyncMillis     float64       `json:"syncMillis"`
	Broadcasts     int           `json:"broadcasts"`
	Rows           []tsRow       `json:"rows"`
	Elapsed        time.Duration `json:"-"`
}

// tsRow is one decrypted change as the TS client reads it.
type tsRow struct {
	Timestamp string                     `json:"timestamp"`
	Table     string                     `json:"table"`
	ID        string                     `json:"id"`
	Values    map[string]json.RawMessage `json:"values"`
	IsInsert  bool                       `json:"isInsert"`
	IsDelete  *bool                      `json:"isDelete"`
	Error     string                     `json:"error"`
}

// tsClientConfig is js/client.mjs's input (see that file).
type tsClientConfig struct {
	DB            string  `json:"db"`
	Secret        string  `json:"secret"`
	Put           []tsPut `json:"put,omitempty"`
	Gen           *tsGen  `json:"gen,omitempty"`
	Relay         string  `json:"relay,omitempty"`
	RangesMaxSize int     `json:"rangesMaxSize,omitempty"`
	Dump          bool    `json:"dump,omitempty"`
	WriteKey      string  `json:"writeKey,omitempty"`
	Subscribe     bool    `json:"subscribe,omitempty"`
	ReadyFile     string  `json:"readyFile,omitempty"`
	Broadcasts    int     `json:"broadcasts,omitempty"`
}

// tsPut is a row the TS client encrypts and stores.
type tsPut struct {
	Table    string         `json:"table"`
	ID       string         `json:"id"`
	Values   map[string]any `json:"values"`
	Millis   uint64         `json:"millis"`
	Counter  uint16         `json:"counter"`
	NodeID   string         `json:"nodeId"`
	IsInsert bool           `json:"isInsert"`
	IsDelete *bool          `json:"isDelete"`
}

// tsGen selects items of the shared universe (see itemMessage).
type tsGen struct {
	Indices []int `json:"indices,omitempty"`
	From    int   `json:"from"`
	To      int   `json:"to"`
	SkipMod int   `json:"skipMod,omitempty"`
	SkipRem int   `json:"skipRem"`
	Pad     int   `json:"pad,omitempty"`
}

// runTSClient runs js/client.mjs once and fails the test if its sync
// reported a protocol error.
func runTSClient(t testing.TB, e realEnv, cfg tsClientConfig) tsClientResult {
	t.Helper()
	res := runTSClientRaw(t, e, cfg)
	if res.Error != nil {
		t.Fatalf("TS client sync failed: %s", *res.Error)
	}
	return res
}

// runTSClientRaw runs js/client.mjs once; a protocol error is in the result.
func runTSClientRaw(t testing.TB, e realEnv, cfg tsClientConfig) tsClientResult {
	t.Helper()
	res, err := execTSClient(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// execTSClient runs js/client.mjs once; it is safe to call from any
// goroutine.
func execTSClient(e realEnv, cfg tsClientConfig) (tsClientResult, error) {
	var res tsClientResult
	in, err := json.Marshal(cfg)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := e.nodeCmd(ctx, "client.mjs", string(in))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("TS client: %w\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		out := stdout.String()
		if len(out) > 300 {
			out = out[:150] + " … " + out[len(out)-150:]
		}
		return res, fmt.Errorf("TS client output (%d bytes) %q: %w\n%s", stdout.Len(), out, err, stderr.String())
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
