package relay_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/pgtest"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

func threeRelays(t *testing.T, dsn string, extra ...string) []*child {
	t.Helper()
	var out []*child
	for range 3 {
		out = append(out, startChild(t, dsn, extra...))
	}
	return out
}

// TestPostgresThreeRelays: three relay processes on one Postgres database
// with devices spread over them serve one consistent view, and a broadcast
// from a write on one reaches a subscriber on another.
func TestPostgresThreeRelays(t *testing.T) {
	relays := threeRelays(t, pgtest.Database(t))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o := testOwner(70)

	// A subscriber on relay 0.
	sub := openStore(t, "sub.db")
	broadcasts := make(chan int, 100)
	synced := make(chan client.SyncReport, 100)
	runDone := make(chan error, 1)
	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		runDone <- client.Run(rctx, relays[0].url, o, sub, client.RunOptions{
			OnBroadcast: func(n int) { broadcasts <- n }, OnSync: func(r client.SyncReport) { synced <- r }})
	}()
	<-synced

	devices := make([]*client.Store, 6)
	for i := range devices {
		devices[i] = openStore(t, fmt.Sprintf("d%d.db", i))
		for j := range 20 {
			c := client.DbChange{Table: "item", ID: protocol.ID{byte(i), byte(j)}, IsInsert: true, Values: []client.Column{{Name: "n", Value: float64(j)}}}
			if _, err := devices[i].Put(ctx, o, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for i, d := range devices {
		wg.Go(func() {
			if rep, err := client.Sync(ctx, relays[i%3].url, o, d, client.SyncOptions{}); err != nil || rep.Sent != 20 {
				t.Errorf("device %d: %+v %v", i, rep, err)
			}
		})
	}
	wg.Wait()
	got := 0
	deadline := time.After(20 * time.Second)
	for got < 120 {
		select {
		case n := <-broadcasts:
			got += n
		case <-deadline:
			t.Fatalf("the subscriber on relay 0 got %d of 120 changes by broadcast from all three relays", got)
		}
	}
	rcancel()
	<-runDone
	// Every relay now serves the same 120 changes.
	for i, r := range relays {
		fresh := openStore(t, fmt.Sprintf("fresh%d.db", i))
		rep, err := client.Sync(ctx, r.url, o, fresh, client.SyncOptions{})
		if err != nil || rep.Received != 120 {
			t.Fatalf("fresh device on relay %d: %+v %v", i, rep, err)
		}
		rows, _ := fresh.Rows(ctx, o.ID(), "item")
		if len(rows) != 120 {
			t.Fatalf("relay %d: %d rows", i, len(rows))
		}
	}
	for i, d := range devices {
		rep, err := client.Sync(ctx, relays[(i+1)%3].url, o, d, client.SyncOptions{})
		if err != nil || rep.Sent != 0 {
			t.Fatalf("device %d on another relay: %+v %v", i, rep, err)
		}
		if rows, _ := d.Rows(ctx, o.ID(), "item"); len(rows) != 120 {
			t.Fatalf("device %d after syncing with another relay: %d rows", i, len(rows))
		}
	}
}

// requestScript is a fixed sequence of requests: pushes of fixed
// messages, then syncs from stores holding different parts.
func requestScript(t *testing.T) [][]byte {
	o := testOwner(71)
	msgs := make([]protocol.EncryptedMessage, 3000)
	for i := range msgs {
		c := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 30+i%50)
		msgs[i] = protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + i*7), Counter: uint16(i % 3), NodeID: protocol.NodeID{byte(i % 4)}}, Change: c}
	}
	var reqs [][]byte
	for from := 0; from < 2000; from += 500 {
		req, n, err := protocol.NewPushRequest(o.ID(), o.WriteKey(), msgs[from:from+500], 0, nil)
		if err != nil || n != 500 {
			t.Fatal(n, err)
		}
		reqs = append(reqs, req)
	}
	ctx := context.Background()
	for _, part := range [][2]int{{0, 0}, {0, 1000}, {500, 3000}, {1990, 2010}} {
		st := protocol.NewMemoryStorage()
		st.WriteMessages(ctx, o.ID(), msgs[part[0]:part[1]])
		req, err := protocol.NewSyncRequest(ctx, st, o.ID(), protocol.SubscriptionNone)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func replies(t *testing.T, url string, reqs [][]byte) [][]byte {
	t.Helper()
	ws := dialCtx(t, url, testOwner(71).ID())
	defer ws.Close(websocket.StatusNormalClosure, "")
	var out [][]byte
	for _, r := range reqs {
		out = append(out, roundTripTB(t, ws, r))
	}
	return out
}

// TestPostgresRepliesMatchSQLite: for the same requests, relays on
// Postgres answer byte for byte as the SQLite relay does, whichever
// process a request goes to.
func TestPostgresRepliesMatchSQLite(t *testing.T) {
	reqs := requestScript(t)
	_, lite := startRelay(t, relay.Config{})
	want := replies(t, lite, reqs)
	relays := threeRelays(t, pgtest.Database(t))
	for i := range reqs {
		got := replies(t, relays[i%3].url, reqs[i:i+1])[0]
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("request %d: Postgres relay %d answered %d bytes, SQLite %d bytes, differently", i, i%3, len(got), len(want[i]))
		}
	}
}

// TestPostgresQuotaAndKill: concurrent writes of one owner through three
// processes keep the quota and usage exact; a process killed mid-write
// loses nothing it acknowledged.
func TestPostgresQuotaAndKill(t *testing.T) {
	dsn := pgtest.Database(t)
	const quota = 300_000
	relays := threeRelays(t, dsn, fmt.Sprintf("FERRY_RELAY_CHILD_QUOTA=%d", quota))
	o := testOwner(72)
	var mu sync.Mutex
	acked := map[protocol.TimestampBytes]bool{}
	var ackedBytes int
	var wg sync.WaitGroup
	killNow := make(chan struct{})
	push := func(i int, r *child, n int) {
		defer wg.Done()
		ws := dialCtx(t, r.url, o.ID())
		defer ws.CloseNow()
		for j := range n {
			m := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + j), NodeID: protocol.NodeID{byte(i), 9}}, Change: make([]byte, 1000)}
			rand.Read(m.Change)
			req, _, err := protocol.NewPushRequest(o.ID(), o.WriteKey(), []protocol.EncryptedMessage{m}, 0, nil)
			if err != nil {
				t.Error(err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = ws.Write(ctx, websocket.MessageBinary, req)
			var reply []byte
			if err == nil {
				_, reply, err = ws.Read(ctx)
			}
			cancel()
			if err != nil {
				return // the process was killed
			}
			if d, err := protocol.Decode(reply); err == nil && d.ErrorCode == protocol.NoError {
				mu.Lock()
				acked[m.Timestamp.Bytes()] = true
				ackedBytes += len(m.Change)
				mu.Unlock()
				if i == 2 && j == 20 {
					close(killNow)
				}
			}
		}
	}
	for i, r := range relays {
		wg.Add(1)
		go push(i, r, 150)
	}
	select {
	case <-killNow:
	case <-time.After(30 * time.Second):
		t.Fatal("relay 2 acknowledged no 21 writes")
	}
	relays[2].kill() // mid-write: its pusher is sending the next ones
	wg.Wait()
	if ackedBytes > quota {
		t.Fatalf("acknowledged %d bytes over a quota of %d", ackedBytes, quota)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored, actual, n int64
	if err := db.QueryRow(`select stored_bytes, (select coalesce(sum(length(change)), 0) from evolu_change where owner = $1),
		(select count(*) from evolu_change where owner = $1) from evolu_owner where owner = $1`, ownerBytes(o)).Scan(&stored, &actual, &n); err != nil {
		t.Fatal(err)
	}
	if stored != actual || stored > quota || int(n) < len(acked) {
		t.Fatalf("stored_bytes %d, changes %d bytes in %d, acknowledged %d, quota %d", stored, actual, n, len(acked), quota)
	}
	freshPath := filepath.Join(t.TempDir(), "fresh.db")
	fresh, err := client.OpenStore(context.Background(), freshPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Sync(ctx, relays[0].url, o, fresh, client.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	have := map[protocol.TimestampBytes]bool{}
	raw := rawClientStorage(t, freshPath)
	size, _ := raw.Size(ctx, o.ID())
	raw.Iterate(ctx, o.ID(), 0, size, func(ts protocol.TimestampBytes, _ int) bool { have[ts] = true; return true })
	for ts := range acked {
		if !have[ts] {
			t.Fatalf("acknowledged change %s lost", ts.Timestamp())
		}
	}
	t.Logf("%d changes acknowledged (%d bytes, quota %d), %d stored", len(acked), ackedBytes, quota, n)
}

// TestPostgresSchemasApart: relays of two deployments in one database
// (two schemas, by search_path) do not hear each other's broadcasts, while
// relays of one deployment do.
func TestPostgresSchemasApart(t *testing.T) {
	db := pgtest.Database(t)
	dsnA := pgtest.Schema(t, db)
	a1, a2 := startChild(t, dsnA), startChild(t, dsnA)
	b := startChild(t, pgtest.Schema(t, db))
	o := testOwner(73)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub := dialCtx(t, a1.url, o.ID())
	defer sub.CloseNow()
	subReq, _ := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request, Subscription: protocol.SubscriptionSubscribe}).Bytes()
	roundTripTB(t, sub, subReq)
	push := func(r *child, ms uint64) {
		pushAll(t, r.url, o, []protocol.EncryptedMessage{{Timestamp: protocol.Timestamp{Millis: ms}, Change: make([]byte, 60)}})
	}
	push(a2, 2)
	_, msg, err := sub.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := protocol.Decode(msg); err != nil || m.Type != protocol.Broadcast || len(m.Messages) != 1 || m.Messages[0].Timestamp.Millis != 2 {
		t.Fatalf("subscriber on deployment A got %+v %v, want A's broadcast", m, err)
	}
	// Another deployment's broadcast (its own id 1, like A's) must not
	// reach A's subscriber, not even as A's row of the same id.
	push(b, 1)
	rctx, rcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer rcancel()
	if _, msg, err := sub.Read(rctx); err == nil {
		m, _ := protocol.Decode(msg)
		t.Fatalf("subscriber on deployment A got a broadcast after a write in deployment B: %+v", m)
	}
}

// TestPostgresWriteKeyRace: two processes receive the first writes of one
// owner at once with different write keys; exactly one key is registered
// and the other is refused everywhere.
func TestPostgresWriteKeyRace(t *testing.T) {
	relays := threeRelays(t, pgtest.Database(t))
	o := testOwner(74)
	keys := []protocol.WriteKey{{1}, {2}, {3}}
	codes := make([]protocol.ErrorCode, len(keys))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range keys {
		ws := dialCtx(t, relays[i].url, o.ID())
		defer ws.CloseNow()
		req, _, err := protocol.NewPushRequest(o.ID(), keys[i], []protocol.EncryptedMessage{{Timestamp: protocol.Timestamp{Millis: uint64(i + 1)}, Change: make([]byte, 60)}}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			m, err := protocol.Decode(roundTripTB(t, ws, req))
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = m.ErrorCode
		})
	}
	close(start)
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch c {
		case protocol.NoError:
			if won >= 0 {
				t.Fatalf("keys %d and %d both accepted: %v", won, i, codes)
			}
			won = i
		case protocol.WriteKeyError:
		default:
			t.Fatalf("key %d: %v", i, c)
		}
	}
	if won < 0 {
		t.Fatalf("no key accepted: %v", codes)
	}
	// Every process now refuses the losers and accepts the winner.
	for i, r := range relays {
		for k := range keys {
			ws := dialCtx(t, r.url, o.ID())
			req, _, _ := protocol.NewPushRequest(o.ID(), keys[k], []protocol.EncryptedMessage{{Timestamp: protocol.Timestamp{Millis: uint64(100 + 10*i + k)}, Change: make([]byte, 60)}}, 0, nil)
			m, err := protocol.Decode(roundTripTB(t, ws, req))
			ws.CloseNow()
			want := protocol.WriteKeyError
			if k == won {
				want = protocol.NoError
			}
			if err != nil || m.ErrorCode != want {
				t.Fatalf("relay %d, key %d (winner %d): %v %v", i, k, won, m, err)
			}
		}
	}
}

// ownerBytes is the owner's id as a database column holds it.
func ownerBytes(o client.Owner) []byte {
	id := o.ID()
	return id[:]
}
