package interop

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/clientstore"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// startFerryRelay runs the Ferry relay in-process on 127.0.0.1 and a free
// port until the test ends.
func startFerryRelay(t *testing.T) (string, *relay.Server) {
	t.Helper()
	srv := newFerryRelay(t, relay.Config{DBPath: filepath.Join(t.TempDir(), "relay.db")})
	return serveInProcess(t, srv), srv
}

// relayDBs maps the relays of newFerryRelay to their database files.
var relayDBs sync.Map

// newFerryRelay is relay.New, remembering the database for relayStorage.
func newFerryRelay(t *testing.T, cfg relay.Config) *relay.Server {
	t.Helper()
	srv, err := relay.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	relayDBs.Store(srv, cfg.DBPath)
	return srv
}

// relayStorage reads what the relay srv stores: its SQLite database
// opened a second time, without the relay's lock (reads see every
// committed write).
func relayStorage(t *testing.T, srv *relay.Server) protocol.Storage {
	t.Helper()
	path, ok := relayDBs.Load(srv)
	if !ok {
		t.Fatal("relay not made by newFerryRelay")
	}
	st, err := sqlstore.Open(context.Background(), path.(string), sqlstore.Config{Kind: sqlstore.KindRelay}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newLoopbackListener listens on 127.0.0.1 and a free port.
func newLoopbackListener() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// ferryOwner derives the owner of a hex secret with evolu/client.
func ferryOwner(t testing.TB, secretHex string) client.Owner {
	t.Helper()
	s, err := client.ParseSecret(secretHex)
	if err != nil {
		t.Fatal(err)
	}
	o := client.OwnerFromSecret(s)
	_, key, _ := protocol.OwnerKeys(s)
	ownerKeys.Store(o.ID(), key)
	return o
}

// ownerKeys maps the owners of ferryOwner to their encryption keys, which
// client.Owner keeps to itself.
var ownerKeys sync.Map

// ferryClients maps the stores of openFerryClient to their database files.
var ferryClients sync.Map

// ferryStorage opens st's database a second time as the client's own
// storage layer (the protocol's view, which client.Store keeps
// unexported); a client store sees writes of other handles.
func ferryStorage(t testing.TB, st *client.Store, owner client.Owner) *clientstore.Store {
	t.Helper()
	path, ok := ferryClients.Load(st)
	if !ok {
		t.Fatal("client store not made by openFerryClient")
	}
	raw, err := clientstore.Open(context.Background(), path.(string))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.AddOwner(owner.ID(), ownerKey(t, owner))
	return raw
}

// ownerKey is the encryption key of an owner made by ferryOwner.
func ownerKey(t testing.TB, owner client.Owner) [32]byte {
	t.Helper()
	k, ok := ownerKeys.Load(owner.ID())
	if !ok {
		t.Fatal("owner not made by ferryOwner")
	}
	return k.([32]byte)
}

// openFerryClient opens a fresh Ferry client store that can read owner's
// changes.
func openFerryClient(t testing.TB, owner client.Owner) *client.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.db")
	st, err := client.OpenStore(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ferryClients.Store(st, path)
	st.AddOwner(owner)
	return st
}

// itemID is the Id of item i: base64url(SHA-256("item-<i>")[:16]), as in
// js/client.mjs.
func itemID(i int) protocol.ID {
	sum := sha256.Sum256([]byte("item-" + strconv.Itoa(i)))
	var id protocol.ID
	copy(id[:], sum[:16])
	return id
}

// itemTitle is the title column of item i.
func itemTitle(i, pad int) string { return "item " + strconv.Itoa(i) + strings.Repeat(" ", pad) }

// itemChange is the DbChange of item i (see js/client.mjs itemMessage).
func itemChange(i, pad int) client.DbChange {
	return client.DbChange{
		Table:    "item",
		ID:       itemID(i),
		Values:   []client.Column{{Name: "title", Value: itemTitle(i, pad)}, {Name: "n", Value: float64(i)}},
		IsInsert: true,
	}
}

// writeFerryItems encrypts items idx with evolu/client and stores them with
// the shared universe's timestamps.
func writeFerryItems(ctx context.Context, t testing.TB, st *client.Store, owner client.Owner, idx []int, pad int) {
	t.Helper()
	msgs := make([]protocol.EncryptedMessage, 0, len(idx))
	for _, i := range idx {
		ts := itemTimestamp(i)
		enc, err := changecodec.EncryptChange(rand.Reader, ts, itemChange(i, pad), ownerKey(t, owner))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, protocol.EncryptedMessage{Timestamp: ts, Change: enc})
	}
	if err := writeAll(ctx, ferryStorage(t, st, owner), owner.ID(), msgs); err != nil {
		t.Fatal(err)
	}
}

// checkFerryItems checks that st holds exactly the decrypted items idx and
// nothing unreadable.
func checkFerryItems(ctx context.Context, t testing.TB, st *client.Store, owner client.Owner, idx []int, pad int) {
	t.Helper()
	rows, err := st.Rows(ctx, owner.ID(), "item")
	if err != nil {
		t.Fatal(err)
	}
	got := map[protocol.ID]map[string]string{}
	for _, r := range rows {
		cols := map[string]string{}
		for _, c := range r.Columns {
			cols[c.Name] = norm(c.Value)
		}
		got[r.ID] = cols
	}
	if len(got) != len(idx) {
		t.Fatalf("Ferry client has %d item rows, want %d", len(got), len(idx))
	}
	for _, i := range idx {
		cols := got[itemID(i)]
		if cols["title"] != norm(itemTitle(i, pad)) || cols["n"] != norm(float64(i)) {
			t.Fatalf("item %d reads %v", i, cols)
		}
	}
	if n, err := st.Unreadable(ctx, owner.ID()); err != nil || n != 0 {
		t.Fatalf("Ferry client has %d unreadable changes (%v)", n, err)
	}
}

// checkTSItems checks that the TS client's decrypted rows are exactly the
// items idx.
func checkTSItems(t testing.TB, rows []tsRow, idx []int, pad int) {
	t.Helper()
	byID := map[string]tsRow{}
	for _, r := range rows {
		if r.Error != "" {
			t.Fatalf("TS client cannot read change %s: %s", r.Timestamp, r.Error)
		}
		if r.Table == "item" {
			byID[r.ID] = r
		}
	}
	if len(byID) != len(idx) {
		t.Fatalf("TS client has %d item rows, want %d", len(byID), len(idx))
	}
	for _, i := range idx {
		r, ok := byID[itemID(i).String()]
		if !ok {
			t.Fatalf("TS client lacks item %d", i)
		}
		ts := itemTimestamp(i).Bytes()
		if r.Timestamp != hex.EncodeToString(ts[:]) || normJSON(r.Values["title"]) != norm(itemTitle(i, pad)) ||
			normJSON(r.Values["n"]) != norm(float64(i)) || !r.IsInsert || r.IsDelete != nil {
			t.Fatalf("TS client reads item %d as %+v", i, r)
		}
	}
}

// norm gives a comparable form of a SqliteValue as Ferry returns it.
func norm(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "s:" + v
	case []byte:
		return "b:" + hex.EncodeToString(v)
	case float64:
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	case int64:
		return "n:" + strconv.FormatFloat(float64(v), 'g', -1, 64)
	case int:
		return "n:" + strconv.FormatFloat(float64(v), 'g', -1, 64)
	default:
		return fmt.Sprintf("?%T:%v", v, v)
	}
}

// normJSON gives the same form for a value as js/client.mjs prints it.
func normJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid:" + string(raw)
	}
	if m, ok := v.(map[string]any); ok {
		if h, ok := m["$bytes"].(string); ok {
			return "b:" + h
		}
	}
	return norm(v)
}
