package tandemcli_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProgressOnTerminal: on a terminal, sync shows a progress bar of the
// changes it sends; through a pipe, only the plain result line.
func TestProgressOnTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give ferry a terminal")
	}
	addr, user, pass := dovecotAccount(t)
	d := newDevice(t, "tty")
	d.ok("init", "--name", "Aimee")
	d.okIn(pass, "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	d.ok("new", "Big")
	for i := range 30 {
		d.ok("add", "Big", "item"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", ferryBin+" sync", "/dev/null")
	cmd.Env = []string{"HOME=" + d.home, "FERRY_HOME=" + d.dir, "PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ferry sync on a terminal: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "Syncing [") || !strings.Contains(s, "/30 sent") && !strings.Contains(s, "sent, ") {
		t.Errorf("no progress bar on a terminal: %q", s)
	}
	if !strings.Contains(s, "Synced: ") {
		t.Errorf("no result line: %q", s)
	}
	d.ok("add", "Big", "one more")
	if out := d.ok("sync"); strings.Contains(out, "\r") || strings.Contains(out, "[") {
		t.Errorf("progress through a pipe: %q", out)
	}
}
