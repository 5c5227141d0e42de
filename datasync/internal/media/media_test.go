package media

import (
	"context"
	"errors"
	"testing"
)

const h1 = "d73deca5a2a317edda0925823c6c775c9acefea1d69889f22b27566b403d8a1c"

// pipe wires a Sender to a Receiver, optionally delivering every chunk twice.
func pipe(r *Receiver, dup bool) (*Sender, *int) {
	n := new(int)
	s := &Sender{}
	s.Send = func(ctx context.Context, b []byte) error {
		*n++
		_ = r.Handle(b)
		if dup {
			_ = r.Handle(b)
		}
		return nil
	}
	r.Refuse = s.Refused
	return s, n
}

func TestDataNeverSurfacesAsFile(t *testing.T) {
	var files, datas int
	r := &Receiver{
		Judge: func(Purpose, uint64) error { return nil },
		Data:  func(p Purpose, b []byte) { datas++ },
		File:  func(string, []byte) { files++ },
	}
	s, _ := pipe(r, true)
	blob := make([]byte, 3*ChunkSize+5)
	if err := s.SendData(context.Background(), Purpose{P: PurposeAttachment, Hash: h1}, blob); err != nil {
		t.Fatal(err)
	}
	if datas != 1 || files != 0 {
		t.Fatalf("data transfer: %d data, %d files", datas, files)
	}
	if err := s.SendFile(context.Background(), "photo.jpg", blob); err != nil {
		t.Fatal(err)
	}
	if datas != 1 || files != 1 {
		t.Fatalf("file transfer: %d data, %d files", datas, files)
	}
}

// §The data purpose: a chunk 0 arriving again with another purpose, or with
// none where the first named one, refuses the transfer; a plain repeat does
// not.
func TestPurposeFixedByFirstChunk0(t *testing.T) {
	var id ID
	id[0] = 1
	first := Header{Envelope: EnvelopeData, Total: 10, Field: []byte(`{"p":"snapshot","doc":"a"}`)}
	for name, again := range map[string]Header{
		"other purpose": {Envelope: EnvelopeData, Total: 10, Field: []byte(`{"p":"snapshot","doc":"b"}`)},
		"no purpose":    {Envelope: EnvelopeFile, Total: 10, Field: []byte("a")},
		"other size":    {Envelope: EnvelopeData, Total: 11, Field: first.Field},
	} {
		var got []byte
		r := &Receiver{Judge: func(Purpose, uint64) error { return nil }, Data: func(_ Purpose, b []byte) { got = b }}
		if err := r.Handle(Chunk{ID: id, Body: first.Marshal()}.Marshal()); err != nil {
			t.Fatal(err)
		}
		if err := r.Handle(Chunk{ID: id, Body: first.Marshal()}.Marshal()); err != nil {
			t.Fatalf("plain repeat refused: %v", err)
		}
		if err := r.Handle(Chunk{ID: id, Body: again.Marshal()}.Marshal()); !errors.Is(err, ErrPurposeRewritten) {
			t.Fatalf("%s: %v", name, err)
		}
		_ = r.Handle(Chunk{ID: id, Index: 1, Body: make([]byte, 10)}.Marshal())
		if got != nil || r.Refusals != 1 {
			t.Fatalf("%s: refused transfer delivered", name)
		}
	}
}

// §Documents too large for a frame: a snapshot over the record bound is
// refused at identification, before any of its bytes are buffered; the rest
// of the transfer is not sent.
func TestRefusedAtIdentification(t *testing.T) {
	const record = 2 * ChunkSize
	r := &Receiver{Judge: func(p Purpose, total uint64) error {
		if p.P == PurposeSnapshot && total > record {
			return ErrOverRecord
		}
		return nil
	}, Data: func(Purpose, []byte) { t.Fatal("delivered") }}
	s, sent := pipe(r, false)
	err := s.SendData(context.Background(), Purpose{P: PurposeSnapshot, Doc: "big"}, make([]byte, 10*ChunkSize))
	if !errors.Is(err, ErrRefusedByPeer) || *sent != 1 || r.Released+r.Dropped != 0 {
		t.Fatalf("err %v, %d chunks sent, %d bytes buffered", err, *sent, r.Released+r.Dropped)
	}
}

// Chunks that arrive before chunk 0 are buffered within a bound and released
// when chunk 0 refuses the transfer.
func TestEarlyChunksReleasedOnRefusal(t *testing.T) {
	r := &Receiver{Judge: func(Purpose, uint64) error { return ErrUnrequested }}
	var id ID
	for i := uint64(1); i <= 8; i++ {
		_ = r.Handle(Chunk{ID: id, Index: i, Body: make([]byte, ChunkSize)}.Marshal())
	}
	h := Header{Envelope: EnvelopeData, Total: 8 * ChunkSize, Field: []byte(`{"p":"attachment","hash":"` + h1 + `"}`)}
	if err := r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal()); !errors.Is(err, ErrUnrequested) {
		t.Fatal(err)
	}
	if r.Released != DefaultMaxEarly || r.Dropped != 8*ChunkSize-DefaultMaxEarly || len(r.rx[id].parts) != 0 {
		t.Fatalf("released %d, dropped %d, still buffered %d", r.Released, r.Dropped, len(r.rx[id].parts))
	}
}

func TestUnknownEnvelopeRefused(t *testing.T) {
	r := &Receiver{Judge: func(Purpose, uint64) error { return nil }, File: func(string, []byte) { t.Fatal("read as a file") }}
	if err := r.Handle(Chunk{Body: Header{Envelope: 9, Total: 1}.Marshal()}.Marshal()); !errors.Is(err, ErrBadChunk) {
		t.Fatal(err)
	}
}

// §The data purpose: a sender that cannot seal chunk 0 abandons the
// transfer rather than sending it unmarked.
func TestUnsealableChunk0Abandons(t *testing.T) {
	calls := 0
	s := &Sender{Send: func(context.Context, []byte) error { calls++; return errors.New("cannot seal") }}
	if err := s.SendData(context.Background(), Purpose{P: PurposeAttachment, Hash: h1}, []byte("x")); err == nil || calls != 1 {
		t.Fatalf("err %v after %d sends", err, calls)
	}
}

func TestNoSecondTransferInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s := &Sender{Send: func(context.Context, []byte) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return nil
	}}
	p := Purpose{P: PurposeAttachment, Hash: h1}
	done := make(chan error)
	go func() { done <- s.SendData(context.Background(), p, []byte("x")) }()
	<-started
	if err := s.SendData(context.Background(), p, []byte("x")); !errors.Is(err, ErrInFlight) {
		t.Fatalf("second transfer: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func FuzzReceiver(f *testing.F) {
	f.Add(Chunk{Body: Header{Envelope: EnvelopeData, Total: 3, Field: []byte(`{"p":"snapshot","doc":"a"}`)}.Marshal()}.Marshal())
	f.Add(Chunk{Index: 1, Body: []byte("abc")}.Marshal())
	f.Fuzz(func(t *testing.T, a []byte) {
		r := &Receiver{Judge: func(Purpose, uint64) error { return nil }, MaxTotal: 1 << 20}
		_ = r.Handle(a)
		_ = r.Handle(a)
	})
}

// A peer opening transfers it never finishes cannot grow the receiver past
// MaxTracked transfers.
func TestTrackedTransfersBounded(t *testing.T) {
	r := &Receiver{}
	for i := range 3 * MaxTracked {
		var id ID
		id[0], id[1] = byte(i), byte(i>>8)
		_ = r.Handle(Chunk{ID: id, Index: 1, Body: make([]byte, 100)}.Marshal())
	}
	if len(r.rx) > MaxTracked {
		t.Fatalf("%d transfers tracked", len(r.rx))
	}
	if r.Released != 2*MaxTracked*100 {
		t.Fatalf("released %d", r.Released)
	}
}
