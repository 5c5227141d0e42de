package protocol

import (
	"context"
	"errors"
	"testing"
)

// failing is a RelayStorage whose chosen operations fail.
type failing struct {
	*MemoryStorage
	validate, write, size bool
}

var errDisk = errors.New("disk full")

func (f *failing) ValidateWriteKey(ctx context.Context, o OwnerID, k WriteKey) (bool, error) {
	if f.validate {
		return false, errDisk
	}
	return f.MemoryStorage.ValidateWriteKey(ctx, o, k)
}

func (f *failing) WriteMessages(ctx context.Context, o OwnerID, m []EncryptedMessage) error {
	if f.write {
		return errDisk
	}
	return f.MemoryStorage.WriteMessages(ctx, o, m)
}

func (f *failing) Size(ctx context.Context, o OwnerID) (int, error) {
	if f.size {
		return 0, errDisk
	}
	return f.MemoryStorage.Size(ctx, o)
}

func request(t *testing.T, o OwnerID, key *WriteKey, sub SubscriptionFlag, msgs []EncryptedMessage, withRanges bool) []byte {
	t.Helper()
	b := NewMessageBuffer(o, BufferOptions{Type: Request, WriteKey: key, Subscription: sub})
	for _, m := range msgs {
		if err := b.AddMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	if withRanges {
		if err := b.AddFingerprint(InfiniteUpperBound, Fingerprint{1}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func replyCode(t *testing.T, b []byte) ErrorCode {
	t.Helper()
	m, err := Decode(b)
	if err != nil || m.Type != Response {
		t.Fatalf("reply %x: %v", b, err)
	}
	return m.ErrorCode
}

// TestRelayOrderOfOperations follows the spec: the subscription takes
// effect before the write key is checked; errors map to their codes.
func TestRelayOrderOfOperations(t *testing.T) {
	ctx := context.Background()
	o := OwnerID{1}
	good, bad := WriteKey{1}, WriteKey{2}
	msg := []EncryptedMessage{{Timestamp: Timestamp{Millis: 1}, Change: make([]byte, 41)}}
	var subs, broadcasts int
	opts := RelayOptions{Subscribe: func(OwnerID) { subs++ }, Broadcast: func(OwnerID, []byte) { broadcasts++ }}

	st := &failing{MemoryStorage: NewMemoryStorage()}
	if _, err := st.ValidateWriteKey(ctx, o, good); err != nil {
		t.Fatal(err)
	}
	out, err := ApplyAsRelay(ctx, st, request(t, o, &bad, SubscriptionSubscribe, msg, false), opts)
	if err != nil || replyCode(t, out) != WriteKeyError || subs != 1 || broadcasts != 0 {
		t.Fatalf("wrong key: %v code subs=%d broadcasts=%d", err, subs, broadcasts)
	}
	if n, _ := st.Size(ctx, o); n != 0 {
		t.Fatal("wrong key stored a message")
	}
	out, _ = ApplyAsRelay(ctx, st, request(t, o, nil, SubscriptionNone, msg, false), opts)
	if replyCode(t, out) != WriteKeyError {
		t.Fatal("messages without a key accepted")
	}
	out, _ = ApplyAsRelay(ctx, st, request(t, o, &good, SubscriptionNone, msg, false), opts)
	if replyCode(t, out) != NoError || broadcasts != 1 {
		t.Fatalf("good key: broadcasts=%d", broadcasts)
	}

	st.validate = true
	out, _ = ApplyAsRelay(ctx, st, request(t, o, &good, SubscriptionNone, nil, false), opts)
	if replyCode(t, out) != WriteError {
		t.Fatal("validate failure is not WriteError")
	}
	st.validate, st.write = false, true
	msg2 := []EncryptedMessage{{Timestamp: Timestamp{Millis: 2}, Change: make([]byte, 41)}}
	out, _ = ApplyAsRelay(ctx, st, request(t, o, &good, SubscriptionNone, msg2, false), opts)
	if replyCode(t, out) != WriteError || broadcasts != 1 {
		t.Fatal("write failure is not WriteError, or it broadcast")
	}
	st.write, st.size = false, true
	out, _ = ApplyAsRelay(ctx, st, request(t, o, nil, SubscriptionNone, nil, true), opts)
	if replyCode(t, out) != SyncError {
		t.Fatal("sync failure is not SyncError")
	}

	st.size = false
	st.MemoryStorage.Quota = 41
	out, _ = ApplyAsRelay(ctx, st, request(t, o, &good, SubscriptionNone, msg2, false), opts)
	if replyCode(t, out) != QuotaError {
		t.Fatal("quota is not QuotaError")
	}

	// An oversize request is dropped unanswered, without effect.
	big, err := Encode(&Message{Header: Header{Version: Version, OwnerID: o, Type: Request}, HasWriteKey: true, WriteKey: good,
		Subscription: SubscriptionSubscribe, Messages: []EncryptedMessage{{Timestamp: Timestamp{Millis: 3}, Change: make([]byte, DefaultMaxSize)}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ApplyAsRelay(ctx, st, big, opts); out != nil || !errors.Is(err, ErrInvalidData) || subs != 1 {
		t.Fatalf("oversize request: %v subs=%d", err, subs)
	}
}
