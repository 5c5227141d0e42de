package media

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
)

// ChunkSize is the most bytes one data chunk carries.
const ChunkSize = 16 * 1024

// Errors of the sending side.
var (
	// ErrInFlight means the same bytes are already crossing to this peer
	// (§Attachments: no second transfer of bytes already in flight).
	ErrInFlight = errors.New("datasync/media: transfer already in flight to this peer")
	// ErrRefusedByPeer means the receiver refused the transfer.
	ErrRefusedByPeer = errors.New("datasync/media: peer refused the transfer")
)

// Sender sends transfers to one peer. Send seals and sends one chunk; when
// it fails for chunk 0 the transfer is abandoned, never retried unmarked
// (§The data purpose: "A sender that cannot seal the chunk at all MUST NOT
// send the transfer unmarked instead").
type Sender struct {
	Send func(ctx context.Context, chunk []byte) error

	mu       sync.Mutex
	inflight map[string]bool
	refused  map[ID]bool
}

// SendFile sends an application's file: envelope 1, a display name, no
// purpose. It is the only shape an application can produce.
func (s *Sender) SendFile(ctx context.Context, name string, data []byte) error {
	if len(name) > 0xffff {
		return fmt.Errorf("%w: name too long", ErrBadChunk)
	}
	return s.transfer(ctx, Header{Envelope: EnvelopeFile, Total: uint64(len(data)), Field: []byte(name)}, data)
}

// SendData sends bytes for the data layer under purpose p (envelope 2).
// Only datasync packages can call it: the mark is not application-settable.
func (s *Sender) SendData(ctx context.Context, p Purpose, data []byte) error {
	mark, err := p.Marshal()
	if err != nil {
		return err
	}
	key := string(mark)
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = map[string]bool{}
	}
	if s.inflight[key] {
		s.mu.Unlock()
		return ErrInFlight
	}
	s.inflight[key] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
	}()
	return s.transfer(ctx, Header{Envelope: EnvelopeData, Total: uint64(len(data)), Field: mark}, data)
}

// Refused records the peer's refusal of transfer id; its remaining chunks
// are not sent. A refusal naming no transfer in progress is ignored, so a
// peer cannot grow the record.
func (s *Sender) Refused(id ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, sending := s.refused[id]; sending {
		s.refused[id] = true
	}
}

func (s *Sender) isRefused(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[id]
}

func (s *Sender) transfer(ctx context.Context, h Header, data []byte) error {
	var id ID
	_, _ = rand.Read(id[:])
	s.mu.Lock()
	if s.refused == nil {
		s.refused = map[ID]bool{}
	}
	s.refused[id] = false // in progress
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.refused, id)
		s.mu.Unlock()
	}()
	if err := s.Send(ctx, Chunk{ID: id, Index: 0, Body: h.Marshal()}.Marshal()); err != nil {
		return fmt.Errorf("datasync/media: chunk 0 not sent, transfer abandoned: %w", err)
	}
	for i, off := uint64(1), 0; off < len(data); i, off = i+1, off+ChunkSize {
		if s.isRefused(id) {
			return ErrRefusedByPeer
		}
		end := min(off+ChunkSize, len(data))
		if err := s.Send(ctx, Chunk{ID: id, Index: i, Body: data[off:end]}.Marshal()); err != nil {
			return err
		}
	}
	return nil
}
