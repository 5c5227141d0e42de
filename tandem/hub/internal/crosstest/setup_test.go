package crosstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMailStateReachable (issue 15, point 15): for a checkout under a
// directory the mail servers' users cannot traverse (mode 0700, as a home
// or temporary directory often is), the setup scripts keep the servers'
// state where those users can reach it; for one they can traverse, under
// the checkout's cache as before. scripts/setup.d/mail-state.bash is what
// 10-dovecot.sh and 20-cyrus.sh use to choose.
func TestMailStateReachable(t *testing.T) {
	script, err := filepath.Abs("../../../../scripts/setup.d/mail-state.bash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("no %s: %v", script, err)
	}
	root := t.TempDir()
	private := filepath.Join(root, "home")
	open := filepath.Join(root, "srv")
	for dir, mode := range map[string]os.FileMode{private: 0o700, open: 0o755} {
		if err := os.MkdirAll(filepath.Join(dir, "checkout"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
	}
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755) // t.TempDir makes its parent 0700
	stateRoot := func(cache string) string {
		cmd := exec.Command("bash", script, cache)
		cmd.Env = append(os.Environ(), "FERRY_MAIL_ROOT=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mail-state.bash %s: %v", cache, err)
		}
		return strings.TrimSpace(string(out))
	}
	cache := filepath.Join(private, "checkout", ".cache")
	got := stateRoot(cache)
	if strings.HasPrefix(got, private) {
		t.Fatalf("state for a checkout under a 0700 directory: %s, still under it", got)
	}
	for d := got; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("state root %s: %s is not searchable by other users", got, d)
		}
	}
	if again := stateRoot(cache); again != got {
		t.Fatalf("the state root moved between runs: %s, then %s", got, again)
	}
	if other := stateRoot(filepath.Join(private, "checkout2", ".cache")); other == got {
		t.Fatalf("two checkouts share the state root %s", got)
	}
	openCache := filepath.Join(open, "checkout", ".cache")
	if got := stateRoot(openCache); got != openCache {
		t.Fatalf("state for a checkout others can traverse: %s, want %s", got, openCache)
	}
}
