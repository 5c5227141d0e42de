package tandemcli_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the damage is made with SQL, as a disk fault would
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

// TestDamagedValueSaysSo: a byte changed in a stored value on disk is never
// shown as someone's value; every command says values were damaged and
// that ferry sync reads them again.
func TestDamagedValueSaysSo(t *testing.T) {
	a := newDevice(t, "aimee")
	a.ok("init", "--name", "Aimee")
	a.ok("new", "House")
	a.ok("add", "House", "Paint the door")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(a.dir, "device", "device.db"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec("UPDATE writes SET stored = replace(stored, CAST('Paint the door' AS BLOB), CAST('Paint the doos' AS BLOB)) WHERE instr(stored, CAST('Paint the door' AS BLOB)) > 0")
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("changing a byte: %v, %d rows", err, n)
	}
	db.Close()
	r := a.run("show", "House")
	if r.code != 0 || !strings.Contains(r.err, "were damaged on disk and are not shown or sent; ferry sync reads the values again") {
		t.Fatalf("show after damage: exit %d, stderr %q", r.code, r.err)
	}
	if strings.Contains(r.out, "doos") {
		t.Fatalf("a damaged value is shown:\n%s", r.out)
	}
}
