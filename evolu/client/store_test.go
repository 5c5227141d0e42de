package client

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/clientstore"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	st, err := OpenStore(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStoreLastWriterWins(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	o := OwnerFromSecret(Secret{1})
	st.AddOwner(o)
	id := protocol.ID{9}
	enc := func(ms uint64, v Value) protocol.EncryptedMessage {
		ts := protocol.Timestamp{Millis: ms}
		c, err := changecodec.EncryptChange(bytes.NewReader(make([]byte, 24)), ts, DbChange{Table: "t", ID: id, Values: []Column{{Name: "v", Value: v}}}, o.encryptionKey)
		if err != nil {
			t.Fatal(err)
		}
		return protocol.EncryptedMessage{Timestamp: ts, Change: c}
	}
	// Newer first, older later: the newer value stays.
	if err := st.storage().WriteMessages(ctx, o.id, []protocol.EncryptedMessage{enc(20, "new")}); err != nil {
		t.Fatal(err)
	}
	if err := st.storage().WriteMessages(ctx, o.id, []protocol.EncryptedMessage{enc(10, "old"), enc(20, "dup")}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Rows(ctx, o.id, "t")
	if err != nil || len(rows) != 1 || rows[0].Columns[0].Value != "new" {
		t.Fatalf("rows %+v %v", rows, err)
	}
	if n, _ := st.storage().Size(ctx, o.id); n != 2 {
		t.Fatalf("size %d", n)
	}
}

func TestStoreUnreadableIsStoredNotApplied(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	o := OwnerFromSecret(Secret{2})
	st.AddOwner(o)
	other := OwnerFromSecret(Secret{3})
	ts := protocol.Timestamp{Millis: 5}
	c, _ := changecodec.EncryptChange(bytes.NewReader(make([]byte, 24)), ts, DbChange{Table: "t", Values: []Column{{Name: "v", Value: 1.0}}}, other.encryptionKey)
	msgs := []protocol.EncryptedMessage{{Timestamp: ts, Change: c}, {Timestamp: protocol.Timestamp{Millis: 6}, Change: []byte{1, 2}}}
	if err := st.storage().WriteMessages(ctx, o.id, msgs); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.storage().Size(ctx, o.id); n != 2 {
		t.Fatalf("size %d", n)
	}
	if n, _ := st.Unreadable(ctx, o.id); n != 2 {
		t.Fatalf("unreadable %d", n)
	}
	if rows, _ := st.Rows(ctx, o.id, ""); len(rows) != 0 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestStorePutClock(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	st.storage().SetNow(func() time.Time { return time.UnixMilli(1000) })
	o := OwnerFromSecret(Secret{4})
	var prev protocol.TimestampBytes
	for i := range 3 {
		ts, err := st.Put(ctx, o, DbChange{Table: "t", ID: protocol.ID{1}, Values: []Column{{Name: "n", Value: float64(i)}}})
		if err != nil {
			t.Fatal(err)
		}
		if ts.Millis != 1000 || ts.Counter != uint16(i) || ts.Bytes().Compare(prev) <= 0 {
			t.Fatalf("put %d: %v", i, ts)
		}
		prev = ts.Bytes()
	}
	// A received later timestamp moves the clock forward.
	later := protocol.Timestamp{Millis: 5000}
	c, _ := changecodec.EncryptChange(bytes.NewReader(make([]byte, 24)), later, DbChange{Table: "t", ID: protocol.ID{2}}, o.encryptionKey)
	if err := st.storage().WriteMessages(ctx, o.id, []protocol.EncryptedMessage{{Timestamp: later, Change: c}}); err != nil {
		t.Fatal(err)
	}
	ts, err := st.Put(ctx, o, DbChange{Table: "t", ID: protocol.ID{1}, Values: []Column{{Name: "n", Value: 9.0}}})
	if err != nil || ts.Millis != 5000 || ts.Counter != 1 {
		t.Fatalf("after receive: %v %v", ts, err)
	}
	rows, _ := st.Rows(ctx, o.id, "t")
	if len(rows) != 1 || rows[0].Columns[0].Value != 9.0 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestSystemColumnsRejected(t *testing.T) {
	var key [32]byte
	for _, col := range []string{"id", "createdAt", "updatedAt", "isDeleted", "ownerId"} {
		if _, err := changecodec.EncryptChange(bytes.NewReader(make([]byte, 24)), protocol.Timestamp{}, DbChange{Table: "t", Values: []Column{{Name: col, Value: 1.0}}}, key); err == nil {
			t.Errorf("%s accepted", col)
		}
	}
}

func TestPutRejectsHugeChange(t *testing.T) {
	st := openTestStore(t)
	o := OwnerFromSecret(Secret{5})
	big := make([]byte, clientstore.MaxMutationSize)
	if _, err := st.Put(context.Background(), o, DbChange{Table: "t", Values: []Column{{Name: "b", Value: big}}}); err == nil {
		t.Fatal("huge change accepted")
	}
	if n, _ := st.storage().Size(context.Background(), o.id); n != 0 {
		t.Fatal("huge change stored")
	}
}
