package media

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

// shuffled wires a Sender to a Receiver over a link that delivers every
// chunk of a transfer in random order once the transfer is sent.
func shuffled(r *Receiver, seed uint64) (*Sender, *testnet.Shuffle) {
	link := testnet.NewShuffle(seed, func(b []byte) { _ = r.Handle(b) })
	s := &Sender{Send: func(_ context.Context, b []byte) error { link.Send(b); return nil }}
	r.Refuse = s.Refused
	return s, link
}

// Issue 17 point 3: the transport does not keep order. Whatever order the
// chunks arrive in (chunk 0 last included), a transfer is delivered once,
// whole, when its last missing piece arrives; a one-chunk transfer whose
// data overtakes chunk 0 among them.
func TestReorderedTransfersDelivered(t *testing.T) {
	for _, size := range []int{1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 5} {
		for seed := range uint64(20) {
			var got [][]byte
			r := &Receiver{Judge: func(Purpose, uint64) error { return nil },
				Data: func(_ Purpose, b []byte) { got = append(got, b) }}
			s, link := shuffled(r, seed)
			blob := bytes.Repeat([]byte{byte(size), byte(seed)}, size)[:size]
			if err := s.SendData(context.Background(), Purpose{P: PurposeSnapshot, Doc: "d"}, blob); err != nil {
				t.Fatal(err)
			}
			link.Flush()
			if len(got) != 1 || !bytes.Equal(got[0], blob) {
				t.Fatalf("size %d seed %d: %d deliveries", size, seed, len(got))
			}
		}
	}
}

// One data chunk that overtakes its chunk 0 is delivered when chunk 0
// arrives; progress is signalled only once the transfer is judged, never
// for the early chunk.
func TestDataBeforeChunk0(t *testing.T) {
	var id ID
	var progress, delivered int
	r := &Receiver{Judge: func(Purpose, uint64) error { return nil },
		Progress: func(Purpose) { progress++ },
		Data:     func(Purpose, []byte) { delivered++ }}
	if err := r.Handle(Chunk{ID: id, Index: 1, Body: []byte("abc")}.Marshal()); err != nil {
		t.Fatal(err)
	}
	if progress != 0 || delivered != 0 {
		t.Fatalf("early chunk counted: progress %d, delivered %d", progress, delivered)
	}
	h := Header{Envelope: EnvelopeData, Total: 3, Field: []byte(`{"p":"snapshot","doc":"a"}`)}
	if err := r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal()); err != nil {
		t.Fatal(err)
	}
	if delivered != 1 {
		t.Fatalf("delivered %d times", delivered)
	}
	// A repeat of chunk 0 after completion starts nothing new.
	_ = r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal())
	if delivered != 1 {
		t.Fatal("delivered twice")
	}
}

// An empty transfer completes at chunk 0, and empty data chunks (which
// carry nothing and would otherwise grow the receiver for free) are not
// kept.
func TestEmptyTransferAndEmptyChunks(t *testing.T) {
	var files int
	r := &Receiver{File: func(string, []byte) { files++ }}
	var id ID
	for i := uint64(1); i < 1000; i++ {
		_ = r.Handle(Chunk{ID: id, Index: i}.Marshal())
	}
	if n := len(r.rx[id].parts); n != 0 {
		t.Fatalf("%d empty chunks kept", n)
	}
	if err := r.Handle(Chunk{ID: id, Body: Header{Envelope: EnvelopeFile, Total: 0, Field: []byte("empty")}.Marshal()}.Marshal()); err != nil {
		t.Fatal(err)
	}
	if files != 1 {
		t.Fatalf("empty file delivered %d times", files)
	}
}

// Chunks that cannot complete the transfer (a gap where the declared total
// is reached) refuse it instead of delivering a hole.
func TestGapAtCompletionRefused(t *testing.T) {
	var id ID
	r := &Receiver{Judge: func(Purpose, uint64) error { return nil }, Data: func(Purpose, []byte) { t.Fatal("delivered") }}
	_ = r.Handle(Chunk{ID: id, Index: 2, Body: []byte("abc")}.Marshal())
	h := Header{Envelope: EnvelopeData, Total: 3, Field: []byte(`{"p":"snapshot","doc":"a"}`)}
	if err := r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal()); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("gap: %v", err)
	}
}

// Repeats of a delivered transfer's chunks (chunk 0 of an empty one
// included) deliver nothing more.
func TestRepeatsAfterDeliveryDropped(t *testing.T) {
	var files int
	r := &Receiver{File: func(string, []byte) { files++ }}
	var id ID
	c0 := Chunk{ID: id, Body: Header{Envelope: EnvelopeFile, Total: 0, Field: []byte("e")}.Marshal()}.Marshal()
	_ = r.Handle(c0)
	_ = r.Handle(c0)
	if files != 1 {
		t.Fatalf("delivered %d times", files)
	}
}

// FuzzReceiverReordered: a transfer of the fuzzer's bytes, cut into chunks
// of the fuzzer's size, arrives in the fuzzer's order with repeats and one
// hostile chunk of the fuzzer's choosing for the same transfer. The
// receiver never panics and delivers at most once; without a hostile chunk
// for the transfer it always delivers exactly what was sent. A hostile
// chunk for the same transfer may win the race for its index (the
// receiver can't tell which of two chunks is the peer's real one; the
// document engine judges the bytes it is given), so then any single
// delivery is allowed.
func FuzzReceiverReordered(f *testing.F) {
	f.Add([]byte("hello, world"), uint64(1), uint8(3), []byte{})
	f.Add([]byte("x"), uint64(7), uint8(1), Chunk{Index: 1, Body: []byte("y")}.Marshal())
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, cut uint8, hostile []byte) {
		if len(data) == 0 || len(data) > 4096 {
			return
		}
		size := int(cut)%64 + 64 // at most 64 chunks: MaxEarlyParts before chunk 0
		var id ID
		id[0] = byte(seed)
		chunks := [][]byte{Chunk{ID: id, Body: Header{Envelope: EnvelopeData, Total: uint64(len(data)),
			Field: []byte(`{"p":"snapshot","doc":"a"}`)}.Marshal()}.Marshal()}
		for i, off := uint64(1), 0; off < len(data); i, off = i+1, off+size {
			chunks = append(chunks, Chunk{ID: id, Index: i, Body: data[off:min(off+size, len(data))]}.Marshal())
		}
		if seed%3 == 0 {
			chunks = append(chunks, chunks[int(seed/3)%len(chunks)])
		}
		var got [][]byte
		r := &Receiver{Judge: func(Purpose, uint64) error { return nil }, MaxTotal: 1 << 20, MaxEarly: 1 << 13, ChunkSize: size,
			Data: func(_ Purpose, b []byte) { got = append(got, b) }}
		link := testnet.NewShuffle(seed, func(b []byte) { _ = r.Handle(b) })
		for _, c := range chunks {
			link.Send(c)
		}
		hostileFor := len(hostile) > 0
		if hostileFor {
			c, err := ParseChunk(hostile)
			hostileFor = err == nil && c.ID == id
			link.Send(hostile)
		}
		link.Flush()
		if len(got) > 1 || len(got) == 1 && !hostileFor && !bytes.Equal(got[0], data) {
			t.Fatalf("%d deliveries (hostile chunk for this transfer: %v)", len(got), hostileFor)
		}
		if !hostileFor && len(got) != 1 {
			t.Fatalf("reordered transfer of %d bytes in %d chunks not delivered", len(data), len(chunks))
		}
	})
}

// A peer cannot grow the receiver by cutting bytes into tiny chunks:
// before chunk 0 at most MaxEarlyParts chunks of a transfer are kept, and
// after it a chunk past the declared size's last index, or longer than a
// chunk, refuses the transfer. Memory is bounded by bytes and by
// Total/ChunkSize entries, not by the number of chunks sent.
func TestTinyChunksBounded(t *testing.T) {
	var id ID
	r := &Receiver{Judge: func(Purpose, uint64) error { return nil }}
	for i := uint64(1); i <= 10_000; i++ {
		_ = r.Handle(Chunk{ID: id, Index: i, Body: []byte{1}}.Marshal())
	}
	if n := len(r.rx[id].parts); n > MaxEarlyParts {
		t.Fatalf("%d early chunks kept", n)
	}
	id[0] = 1
	h := Header{Envelope: EnvelopeData, Total: 3 * ChunkSize, Field: []byte(`{"p":"snapshot","doc":"a"}`)}
	if err := r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal()); err != nil {
		t.Fatal(err)
	}
	if err := r.Handle(Chunk{ID: id, Index: 4, Body: []byte{1}}.Marshal()); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("chunk past the last index: %v", err)
	}
	id[0] = 2
	_ = r.Handle(Chunk{ID: id, Body: h.Marshal()}.Marshal())
	if err := r.Handle(Chunk{ID: id, Index: 1, Body: make([]byte, ChunkSize+1)}.Marshal()); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("chunk over the chunk size: %v", err)
	}
}

// Refusals naming no transfer in progress are not remembered, and a
// finished transfer's record is dropped.
func TestSenderForgetsRefusals(t *testing.T) {
	s := &Sender{Send: func(context.Context, []byte) error { return nil }}
	for i := range 1000 {
		var id ID
		id[0], id[1] = byte(i), byte(i>>8)
		s.Refused(id)
	}
	_ = s.SendData(context.Background(), Purpose{P: PurposeSnapshot, Doc: "d"}, []byte("x"))
	if len(s.refused) != 0 {
		t.Fatalf("%d refusals remembered", len(s.refused))
	}
}
