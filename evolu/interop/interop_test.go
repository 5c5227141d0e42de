package interop

import (
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Points (a)–(d) of issue 5, against the real npm packages (see doc.go).

// (a) The real TS client pushes and pulls through the Ferry relay.
func TestTSClientPushPullThroughFerryRelay(t *testing.T) {
	e := needReal(t)
	url, srv := startFerryRelay(t)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	dir := t.TempDir()
	a := tsClientConfig{DB: filepath.Join(dir, "a.db"), Secret: testSecret, Relay: url}
	b := tsClientConfig{DB: filepath.Join(dir, "b.db"), Secret: testSecret, Relay: url}

	// A pushes 400 items.
	a.Gen = &tsGen{To: 400}
	push := runTSClient(t, e, a)
	if push.Outcome != "Converged" || push.Count != 400 || push.BytesSent == 0 {
		t.Fatalf("TS push through Ferry relay: %+v", push)
	}
	if n, _ := relayStorage(t, srv).Size(ctx, owner.ID()); n != 400 {
		t.Fatalf("Ferry relay stored %d, want 400", n)
	}
	// B pulls them and reads every change.
	b.Dump = true
	pull := runTSClient(t, e, b)
	if pull.Count != 400 || pull.Fingerprint != push.Fingerprint {
		t.Fatalf("TS pull: %d %s, want 400 %s", pull.Count, pull.Fingerprint, push.Fingerprint)
	}
	checkTSItems(t, pull.Rows, seq(0, 400), 0)
	// B pushes 100 more, A pulls them: both directions for both clients.
	b.Gen, b.Dump = &tsGen{From: 400, To: 500}, false
	if r := runTSClient(t, e, b); r.Count != 500 {
		t.Fatalf("TS client B after push: %+v", r)
	}
	a.Gen, a.Dump = nil, true
	again := runTSClient(t, e, a)
	if again.Count != 500 {
		t.Fatalf("TS client A after pull: %d", again.Count)
	}
	checkTSItems(t, again.Rows, seq(0, 500), 0)
}

// (b) The Ferry client pushes and pulls through the real TS relay.
func TestFerryClientPushPullThroughTSRelay(t *testing.T) {
	e := needReal(t)
	relay := startTSRelay(t, e)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	a, b := openFerryClient(t, owner), openFerryClient(t, owner)

	writeFerryItems(ctx, t, a, owner, seq(0, 400), 0)
	rep, err := client.Sync(ctx, relay.URL, owner, a, client.SyncOptions{})
	if err != nil {
		t.Fatalf("Ferry push through TS relay: %v\n%s", err, relay.Stderr())
	}
	if rep.Sent != 400 || rep.Outcome != protocol.Converged.String() {
		t.Fatalf("push report %+v", rep)
	}
	rep, err = client.Sync(ctx, relay.URL, owner, b, client.SyncOptions{})
	if err != nil || rep.Received != 400 {
		t.Fatalf("Ferry pull through TS relay: %+v %v", rep, err)
	}
	checkFerryItems(ctx, t, b, owner, seq(0, 400), 0)

	// The @evolu/nodejs relay (common 8.0.0-next.5) may list the wrong
	// timestamps for a small range, so the client can send a few it already
	// has (docs/decisions/evolu-interop-relay-811.md): at least the 100.
	writeFerryItems(ctx, t, b, owner, seq(400, 500), 0)
	if rep, err := client.Sync(ctx, relay.URL, owner, b, client.SyncOptions{}); err != nil || rep.Sent < 100 {
		t.Fatalf("second push: %+v %v", rep, err)
	}
	if rep, err := client.Sync(ctx, relay.URL, owner, a, client.SyncOptions{}); err != nil || rep.Received != 100 {
		t.Fatalf("second pull: %+v %v", rep, err)
	}
	checkFerryItems(ctx, t, a, owner, seq(0, 500), 0)

	// The real TS client reads what the Ferry clients wrote.
	ts := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "ts.db"), Secret: testSecret, Relay: relay.URL, Dump: true})
	checkTSItems(t, ts.Rows, seq(0, 500), 0)
}

// twoThirds are the items of a universe of n that a side holds: all but
// those with i%3 == skip.
func twoThirds(n, skip int) []int {
	var out []int
	for i := range n {
		if i%3 != skip {
			out = append(out, i)
		}
	}
	return out
}

// manyItems is the size of (c): thousands of messages whose changes (about
// 500 bytes each) need several rounds of the 1 MB message limit.
const (
	manyItems = 3000
	manyPad   = 400
)

// (c) Thousands of messages split across several rounds, with each side
// holding a different two-thirds; TS client with the Ferry relay.
func TestManyRoundsTSClientFerryRelay(t *testing.T) {
	e := needReal(t)
	url, srv := startFerryRelay(t)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 3*time.Minute)

	// The relay holds two-thirds, pushed by a Ferry client.
	loader := openFerryClient(t, owner)
	writeFerryItems(ctx, t, loader, owner, twoThirds(manyItems, 0), manyPad)
	if _, err := client.Sync(ctx, url, owner, loader, client.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	// The TS client holds another two-thirds.
	ts := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "ts.db"), Secret: testSecret,
		Gen: &tsGen{To: manyItems, SkipMod: 3, SkipRem: 1, Pad: manyPad}, Relay: url, Dump: true})
	if ts.Count != manyItems || ts.Rounds < 3 {
		t.Fatalf("TS client: %d messages in %d rounds, want %d in several", ts.Count, ts.Rounds, manyItems)
	}
	checkTSItems(t, ts.Rows, seq(0, manyItems), manyPad)
	n, fp, err := storeDigest(ctx, relayStorage(t, srv), owner.ID())
	if err != nil || n != manyItems || hex.EncodeToString(fp[:]) != ts.Fingerprint {
		t.Fatalf("Ferry relay: %d %x (%v), TS client %d %s", n, fp, err, ts.Count, ts.Fingerprint)
	}
	// A fresh Ferry client pulls everything and reads it.
	fresh := openFerryClient(t, owner)
	rep, err := client.Sync(ctx, url, owner, fresh, client.SyncOptions{})
	if err != nil || rep.Received != manyItems || rep.Rounds < 2 {
		t.Fatalf("fresh pull: %+v %v", rep, err)
	}
	checkFerryItems(ctx, t, fresh, owner, seq(0, manyItems), manyPad)
	t.Logf("TS client: %d rounds, %d B sent, %d B received", ts.Rounds, ts.BytesSent, ts.BytesReceived)
}

// (c) The same with the Ferry client and the real TS relay.
func TestManyRoundsFerryClientTSRelay(t *testing.T) {
	e := needReal(t)
	relay := startTSRelay(t, e)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 3*time.Minute)

	// The relay holds two-thirds, pushed by the real TS client.
	load := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "load.db"), Secret: testSecret,
		Gen: &tsGen{To: manyItems, SkipMod: 3, SkipRem: 0, Pad: manyPad}, Relay: relay.URL})
	if load.Count != 2*manyItems/3 {
		t.Fatalf("TS loader: %+v", load)
	}
	// The Ferry client holds another two-thirds.
	st := openFerryClient(t, owner)
	writeFerryItems(ctx, t, st, owner, twoThirds(manyItems, 1), manyPad)
	rep, err := client.Sync(ctx, relay.URL, owner, st, client.SyncOptions{})
	if err != nil {
		t.Fatalf("Ferry sync with TS relay: %v\n%s", err, relay.Stderr())
	}
	if rep.Rounds < 3 || rep.Sent < manyItems/3 || rep.Received != manyItems/3 {
		t.Fatalf("Ferry client: %+v, want %d sent and received in several rounds", rep, manyItems/3)
	}
	checkFerryItems(ctx, t, st, owner, seq(0, manyItems), manyPad)
	// A fresh TS client pulls everything from the TS relay and reads it.
	n, fp, _ := storeDigest(ctx, ferryStorage(t, st, owner), owner.ID())
	ts := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "ts.db"), Secret: testSecret, Relay: relay.URL, Dump: true})
	if ts.Count != n || ts.Fingerprint != hex.EncodeToString(fp[:]) {
		t.Fatalf("TS pull: %d %s, Ferry client %d %x", ts.Count, ts.Fingerprint, n, fp)
	}
	checkTSItems(t, ts.Rows, seq(0, manyItems), manyPad)
	t.Logf("Ferry client: %+v", rep)
}

// kindsRow is one row with a value of every SqliteValue kind, as the TS
// client puts it (JSON) and as the Ferry client puts it.
var kindsColumns = []struct {
	name string
	ts   any // js/client.mjs put value
	go_  any // client.Value
}{
	{"s", "Příliš žluťoučký kůň 🐎", "Příliš žluťoučký kůň 🐎"},
	{"empty", "", ""},
	{"small", 7, float64(7)},
	{"int", 123456789, float64(123456789)},
	{"neg", -42.5, -42.5},
	{"big", 1e300, 1e300},
	{"null", nil, nil},
	{"bytes", map[string]string{"$bytes": "00ff10"}, []byte{0, 0xff, 0x10}},
	{"ref", "BSf-8mxNjgk72yD-D7rr1A", "BSf-8mxNjgk72yD-D7rr1A"},
	{"date", "2024-02-29T12:34:56.789Z", "2024-02-29T12:34:56.789Z"},
	{"olddate", "1969-07-20T20:17:40.000Z", "1969-07-20T20:17:40.000Z"},
	{"json", `{"a":[1,2.5,"x",null,true]}`, `{"a":[1,2.5,"x",null,true]}`},
	{"b64", "abc_-", "abc_-"},
}

// (d) Encrypted changes written by one implementation are read by the other,
// through either relay.
func TestEncryptedChangesCrossRead(t *testing.T) {
	e := needReal(t)
	ferryURL, _ := startFerryRelay(t)
	tsRelay := startTSRelay(t, e)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	tsID := "AAAAAAAAAAAAAAAAAAAAAA"
	goID, err := protocol.ParseID("_____________________w")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ name, url string }{{"ferry relay", ferryURL}, {"ts relay", tsRelay.URL}} {
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			// TS writes a row with every value kind.
			values := map[string]any{}
			for _, c := range kindsColumns {
				values[c.name] = c.ts
			}
			runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "ts.db"), Secret: testSecret, Relay: r.url,
				Put: []tsPut{{Table: "kinds", ID: tsID, Values: values, Millis: uint64(time.Now().UnixMilli()), NodeID: "0000000000000abc", IsInsert: true}}})
			// Ferry reads it, then writes its own row and a deletion.
			st := openFerryClient(t, owner)
			if _, err := client.Sync(ctx, r.url, owner, st, client.SyncOptions{}); err != nil {
				t.Fatal(err)
			}
			rows, err := st.Rows(ctx, owner.ID(), "kinds")
			if err != nil || len(rows) != 1 || rows[0].ID.String() != tsID {
				t.Fatalf("Ferry reads %+v (%v)", rows, err)
			}
			got := map[string]string{}
			for _, c := range rows[0].Columns {
				got[c.Name] = norm(c.Value)
			}
			for _, c := range kindsColumns {
				if got[c.name] != norm(c.go_) {
					t.Errorf("Ferry reads TS column %s as %s, want %s", c.name, got[c.name], norm(c.go_))
				}
			}
			cols := make([]client.Column, len(kindsColumns))
			for i, c := range kindsColumns {
				cols[i] = client.Column{Name: c.name, Value: c.go_}
			}
			if _, err := st.Put(ctx, owner, client.DbChange{Table: "kinds", ID: goID, Values: cols, IsInsert: true}); err != nil {
				t.Fatal(err)
			}
			deleted := true
			if _, err := st.Put(ctx, owner, client.DbChange{Table: "kinds", ID: goID, IsDelete: &deleted}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Sync(ctx, r.url, owner, st, client.SyncOptions{}); err != nil {
				t.Fatal(err)
			}
			// TS reads Ferry's changes.
			res := runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "ts.db"), Secret: testSecret, Relay: r.url, Dump: true})
			var insert, del *tsRow
			for i := range res.Rows {
				row := &res.Rows[i]
				if row.Error != "" {
					t.Fatalf("TS cannot read change %s: %s", row.Timestamp, row.Error)
				}
				if row.ID == goID.String() && row.IsInsert {
					insert = row
				}
				if row.ID == goID.String() && row.IsDelete != nil && *row.IsDelete {
					del = row
				}
			}
			if insert == nil || del == nil || len(del.Values) != 0 {
				t.Fatalf("TS does not read Ferry's insert and delete: %+v", res.Rows)
			}
			for _, c := range kindsColumns {
				if g := normJSON(insert.Values[c.name]); g != norm(c.go_) {
					t.Errorf("TS reads Ferry column %s as %s, want %s", c.name, g, norm(c.go_))
				}
			}
		})
	}
}
