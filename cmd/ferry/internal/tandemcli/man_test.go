package tandemcli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tandemPages are the man pages of this package's commands, which must be
// in docs/man as ferry man writes them.
var tandemPages = []string{"ferry-init.1", "ferry-restore.1", "ferry-connect.1", "ferry-connect-imap.1", "ferry-connect-jmap.1",
	"ferry-connect-paste.1", "ferry-hub-qr.1", "ferry-backup-key.1", "ferry-new.1", "ferry-lists.1", "ferry-show.1",
	"ferry-rename.1", "ferry-copy.1", "ferry-add.1", "ferry-set.1", "ferry-tag.1", "ferry-untag.1", "ferry-done.1",
	"ferry-rm.1", "ferry-status.1", "ferry-sync.1", "ferry-share.1", "ferry-join.1", "ferry-requests.1", "ferry-approve.1",
	"ferry-decline.1", "ferry-members.1", "ferry-leave.1", "ferry-device-add.1", "ferry-device-join.1",
	"ferry-role.1", "ferry-remove.1", "ferry-delete.1", "ferry-start-over.1",
	"ferry-finish.1", "ferry-discard.1", "ferry-new-key.1", "ferry-make-private.1"}

// TestManPages: ferry man writes a page per command, and docs/man holds
// the current ones (regenerate: go run ./cmd/ferry man docs/man).
func TestManPages(t *testing.T) {
	d := newDevice(t, "x")
	dir := t.TempDir()
	d.ok("man", dir)
	for _, p := range tandemPages {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("ferry man wrote no %s", p)
			continue
		}
		committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "man", p))
		if err != nil || string(committed) != string(got) {
			t.Errorf("docs/man/%s is missing or stale: run go run ./cmd/ferry man docs/man", p)
		}
	}
	root, _ := os.ReadFile(filepath.Join(dir, "ferry.1"))
	if !strings.Contains(string(root), "ferry-sync(1)") || !strings.Contains(string(root), "2  the command line was wrong") {
		t.Error("ferry.1 does not refer to ferry-sync(1) or lacks the exit status")
	}
	sync, _ := os.ReadFile(filepath.Join(dir, "ferry-sync.1"))
	if !strings.Contains(string(sync), "watch") {
		t.Error("ferry-sync.1 does not describe --watch")
	}
}

// TestVersionAndCompletion: --version, and cobra's completion scripts.
func TestVersionAndCompletion(t *testing.T) {
	d := newDevice(t, "x")
	if out := d.ok("--version"); !strings.HasPrefix(out, "ferry ") {
		t.Errorf("--version: %q", out)
	}
	if out := d.ok("completion", "bash"); !strings.Contains(out, "__start_ferry") {
		t.Error("no bash completion")
	}
	out := d.ok("help")
	for _, c := range []string{"init", "connect", "backup-key", "new", "lists", "show", "add", "set", "tag", "untag", "done", "rm", "rename", "copy", "status", "sync",
		"share", "join", "requests", "approve", "decline", "members", "leave", "device", "role", "remove", "delete", "start-over", "finish", "discard", "new-key", "make-private"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("ferry help does not list %s", c)
		}
	}
	if out := d.ok("help", "exit-codes"); !strings.Contains(out, "2  the command line was wrong") {
		t.Errorf("help exit-codes: %s", out)
	}
}

// TestCompletion: the shell completes list names and item titles.
func TestCompletion(t *testing.T) {
	d := newDevice(t, "x")
	d.ok("init", "--name", "Aimee")
	d.ok("new", "Groceries")
	d.ok("new", "Garden")
	d.ok("add", "Groceries", "Milk")
	d.ok("add", "Groceries", "Mint tea")
	if out := d.ok("__complete", "show", "Gr"); !strings.HasPrefix(out, "Groceries\n:4\n") {
		t.Errorf("lists: %q", out)
	}
	if out := d.ok("__complete", "show", "Groceries", "m"); !strings.HasPrefix(out, "Milk\nMint tea\n:4\n") {
		t.Errorf("items: %q", out)
	}
	if out := d.ok("__complete", "share", "Groceries", ""); !strings.HasPrefix(out, ":4\n") {
		t.Errorf("share takes one list: %q", out)
	}
}
