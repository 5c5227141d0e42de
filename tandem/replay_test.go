package tandem

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/suite/suitetest"
)

// A member who re-signs one of their writes with other nonces and posts
// each signature, smallest last: every device keeps the smallest (§9.3),
// each replacement is a row of its own in the writes table until a prune
// (devstore schema 5), a reopen before any prune still holds the smallest,
// and after a prune one row is left for the write.
func TestReplayedSignaturesKeepTheSmallest(t *testing.T) {
	srv := memhubServer(t)
	opts := Options{Name: "Jesper", Store: memStore(srv)}
	a := openT(t, filepath.Join(t.TempDir(), "a"), opts)
	defer a.Close()
	c, err := a.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := a.NewRecord(c, map[string][]byte{"title": []byte("Paint")})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	bDir := filepath.Join(t.TempDir(), "b")
	b, err := Restore(t.Context(), bDir, a.ShowBackupKey(), Options{Name: "Jesper", Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { b.Close() }()
	syncT(t, b)

	title := titleWrite(t, a, c, rec)
	body := title.Body()
	si, err := body.SigInput()
	if err != nil {
		t.Fatal(err)
	}
	id := suite.NewIdentity(a.us)
	var sigs [][]byte
	for n := range byte(8) {
		if s := suitetest.SignWithNonce(id.SignKey, si, n); bytes.Compare(s, title.Sig()) < 0 {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) < 2 {
		t.Fatalf("only %d of 8 signatures sort below the original; pick other nonces", len(sigs))
	}
	slices.SortFunc(sigs, func(x, y []byte) int { return bytes.Compare(y, x) }) // largest first: each one replaces
	epoch, _ := epochOf(a, c)
	tag, key, ok := a.eng.EpochChannel([16]byte(c), epoch)
	if !ok {
		t.Fatal("no channel for the current epoch")
	}
	raw, err := memStore(srv)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rowsBefore, _ := b.db.WriteRows(t.Context())
	for _, sig := range sigs {
		appendRecord(t, raw, tag, key, [16]byte(rec), client.SignedWrite{Body: body, Sig: sig})
		if rep := syncT(t, b); rep.Rejected != 0 {
			t.Fatalf("a valid re-signature was rejected: %+v", rep)
		}
	}
	smallest := sigs[len(sigs)-1]
	if got := titleWrite(t, b, c, rec).Sig(); !bytes.Equal(got, smallest) {
		t.Fatalf("b keeps signature %x…, want the smallest %x…", got[:4], smallest[:4])
	}
	if rows, _ := b.db.WriteRows(t.Context()); rows != rowsBefore+len(sigs) {
		t.Fatalf("%d write rows after %d replacements, want %d", rows, len(sigs), rowsBefore+len(sigs))
	}

	b.Close() // too few dead rows for a prune (pruneWorth)
	b = openT(t, bDir, Options{Name: "Jesper", Store: memStore(srv)})
	if got := titleWrite(t, b, c, rec).Sig(); !bytes.Equal(got, smallest) {
		t.Fatalf("after reopening with every copy stored, b keeps %x…, want the smallest", got[:4])
	}
	if _, err := b.db.Prune(t.Context(), func([32]byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = openT(t, bDir, Options{Name: "Jesper", Store: memStore(srv)})
	if got := titleWrite(t, b, c, rec).Sig(); !bytes.Equal(got, smallest) {
		t.Fatalf("after a prune, b keeps %x…, want the smallest", got[:4])
	}
	var copies int
	wid := title.ID()
	if err := b.db.SQL().QueryRow("SELECT count(*) FROM writes WHERE wid = ?", wid[:]).Scan(&copies); err != nil || copies != 1 {
		t.Fatalf("%d rows for the re-signed write after a prune (%v), want 1", copies, err)
	}
}

// titleWrite returns the kept "title" write of rec on d.
func titleWrite(t *testing.T, d *Device, c CollectionID, rec RecordID) *record.Write {
	t.Helper()
	var out *record.Write
	d.eng.View([16]byte(c), func(st *record.State, _ *roster.Roster, _ roster.Status) {
		for _, w := range st.Writes([16]byte(rec)) {
			if w.Field() == "title" {
				out = w
			}
		}
	})
	if out == nil {
		t.Fatal("no title write")
	}
	return out
}
