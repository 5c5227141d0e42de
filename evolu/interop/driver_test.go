package interop

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

// wsStats describes one sync session.
type wsStats struct {
	Rounds        int // requests sent
	BytesSent     int64
	BytesReceived int64
	Outcome       protocol.ClientOutcome
	Duration      time.Duration
	// Wait is the sum over rounds of the time from sending a request to
	// having read the relay's reply: the relay's share of Duration (its
	// work plus the loopback transfer), without the client's own work.
	Wait time.Duration
}

// protocolSync is the benchmark's client workload, the same for both relays:
// the evolu/internal/protocol client functions over a WebSocket, as Evolu does — a
// createProtocolMessageForSync request, then applyProtocolMessageAsClient on
// every reply until it stops answering. It is deliberately independent of
// evolu/client so the relays are compared under one fixed client.
func protocolSync(ctx context.Context, url string, owner protocol.OwnerID, key protocol.WriteKey, st protocol.Storage) (wsStats, error) {
	var s wsStats
	start := time.Now()
	// No permessage-deflate: the TS relay's ws server does not negotiate it
	// and encrypted changes do not compress.
	conn, _, err := websocket.Dial(ctx, url+"?ownerId="+owner.String(), &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return s, fmt.Errorf("dial %s: %w", url, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(protocol.MaxMaxSize)
	var sentAt time.Time
	send := func(b []byte) error {
		sentAt = time.Now()
		s.Rounds++
		s.BytesSent += int64(len(b))
		return conn.Write(ctx, websocket.MessageBinary, b)
	}
	req, err := protocol.NewSyncRequest(ctx, st, owner, protocol.SubscriptionNone)
	if err != nil {
		return s, err
	}
	if err := send(req); err != nil {
		return s, err
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return s, fmt.Errorf("read: %w", err)
		}
		if !sentAt.IsZero() { // the reply to the last request
			s.Wait += time.Since(sentAt)
			sentAt = time.Time{}
		}
		s.BytesReceived += int64(len(data))
		res, err := protocol.ApplyAsClient(ctx, st, data, protocol.ClientOptions{WriteKey: &key})
		if err != nil {
			return s, fmt.Errorf("apply: %w", err)
		}
		s.Outcome = res.Outcome
		switch res.Outcome {
		case protocol.ContinueResponse:
			if err := send(res.Message); err != nil {
				return s, err
			}
		case protocol.Broadcasted:
			continue
		default:
			s.Duration = time.Since(start)
			conn.Close(websocket.StatusNormalClosure, "")
			return s, nil
		}
	}
}

// vectorOwner is owner i of testdata/evolu/owners.json (made by the real
// createAppOwner), so the harness needs no key derivation of its own.
type vectorOwner struct {
	Secret   string
	ID       protocol.OwnerID
	WriteKey protocol.WriteKey
	EncKey   []byte
}

func loadOwner(t testing.TB, i int) vectorOwner {
	t.Helper()
	var v struct {
		Owners []struct {
			Secret        string `json:"secret"`
			ID            string `json:"id"`
			WriteKey      string `json:"writeKey"`
			EncryptionKey string `json:"encryptionKey"`
		} `json:"owners"`
	}
	vectors.Load(t, "owners.json", &v)
	o := v.Owners[i]
	id, err := protocol.ParseOwnerID(o.ID)
	if err != nil {
		t.Fatal(err)
	}
	var k protocol.WriteKey
	copy(k[:], vectors.Unhex(t, o.WriteKey))
	return vectorOwner{Secret: o.Secret, ID: id, WriteKey: k, EncKey: vectors.Unhex(t, o.EncryptionKey)}
}

// itemTimestamp is the timestamp of item i of the shared universe of
// js/client.mjs: millis 1700000000000+i, counter 0, nodeId 0123456789abcdef.
func itemTimestamp(i int) protocol.Timestamp {
	return protocol.Timestamp{Millis: 1700000000000 + uint64(i), NodeID: protocol.NodeID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}}
}

// opaqueItems are n messages of the universe with opaque change bodies of
// size bytes (a relay never decrypts; see the benchmark doc).
func opaqueItems(idx []int, size int) []protocol.EncryptedMessage {
	out := make([]protocol.EncryptedMessage, len(idx))
	for k, i := range idx {
		out[k] = protocol.EncryptedMessage{Timestamp: itemTimestamp(i), Change: vectors.PatternChange(i, size)}
	}
	return out
}

// writeAll stores msgs in batches.
func writeAll(ctx context.Context, st protocol.Storage, owner protocol.OwnerID, msgs []protocol.EncryptedMessage) error {
	for len(msgs) > 0 {
		n := min(len(msgs), 5000)
		if err := st.WriteMessages(ctx, owner, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// storeDigest is the count and whole-store fingerprint of an owner.
func storeDigest(ctx context.Context, st protocol.Storage, owner protocol.OwnerID) (int, protocol.Fingerprint, error) {
	n, err := st.Size(ctx, owner)
	if err != nil {
		return 0, protocol.Fingerprint{}, err
	}
	fp, err := st.Fingerprint(ctx, owner, 0, n)
	return n, fp, err
}

var errNotConverged = errors.New("stores differ after sync")
