package tandemcli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRestoreRepairsMissingIdentity: a profile whose identity file was
// deleted says so and names the way back; ferry restore with the user's
// backup key repairs it in place and keeps the change never synced. A
// working profile is still refused, and another user's key changes nothing.
func TestRestoreRepairsMissingIdentity(t *testing.T) {
	a := newDevice(t, "aimee")
	out := a.ok("init", "--name", "Aimee")
	key := regexp.MustCompile(`(?m)^    ((?:[a-z2-7]{4} ){13}[a-z2-7]{4})$`).FindStringSubmatch(out)
	if key == nil {
		t.Fatalf("init shows no backup key:\n%s", out)
	}
	a.ok("new", "Groceries")
	a.ok("add", "Groceries", "Milk")
	wantErr(t, a.runIn(key[1]+"\n", "restore", "--backup-key-file", "-"), 1, "already holds a device")

	if err := os.Remove(filepath.Join(a.dir, "device", "secret")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, a.run("lists"), 1, "restore this device with your backup key")

	other := newDevice(t, "other")
	okey := regexp.MustCompile(`(?m)^    ((?:[a-z2-7]{4} ){13}[a-z2-7]{4})$`).FindStringSubmatch(other.ok("init", "--name", "Ben"))
	if okey == nil {
		t.Fatal("no backup key for Ben")
	}
	wantErr(t, a.runIn(okey[1]+"\n", "restore", "--backup-key-file", "-"), 1, "belongs to another user")
	if _, err := os.Stat(filepath.Join(a.dir, "device", "secret")); err == nil {
		t.Fatal("another user's key wrote an identity file")
	}

	if out := a.okIn(key[1]+"\n", "restore", "--backup-key-file", "-"); !strings.Contains(out, "Repaired") {
		t.Fatalf("restore into the damaged profile: %s", out)
	}
	if out := a.ok("show", "Groceries"); !strings.Contains(out, "Milk") {
		t.Fatalf("the change never synced is gone after the repair:\n%s", out)
	}
}
