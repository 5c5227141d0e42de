package media

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// DefaultMaxTotal is the local file-size ceiling (100 MB), a local policy and
// not a protocol constant (§Attachments).
const DefaultMaxTotal = 100_000_000

// DefaultMaxEarly bounds the bytes buffered for a transfer before its chunk
// 0 arrives and it can be judged.
const DefaultMaxEarly = 4 * ChunkSize

// MaxEarlyParts bounds the chunks buffered for a transfer before its chunk
// 0 arrives, whatever their size: tiny chunks cannot grow the receiver by
// count where MaxEarly bounds them by bytes.
const MaxEarlyParts = 64

// MaxTracked bounds the transfers one Receiver tracks (open or refused).
// Past it, the least recently active transfer is forgotten and its buffers
// released, so a peer cannot grow the receiver without bound by opening
// transfers it never finishes.
const MaxTracked = 256

// Reasons a receiver refuses a transfer.
var (
	ErrUnrequested      = errors.New("datasync/media: no outstanding request for these bytes")
	ErrOverRecord       = errors.New("datasync/media: document larger than one record")
	ErrOverCeiling      = errors.New("datasync/media: transfer larger than the local ceiling")
	ErrPurposeRewritten = errors.New("datasync/media: chunk 0 arrived again with a different purpose")
	ErrOverDeclared     = errors.New("datasync/media: more bytes than the declared total")
)

// Receiver reassembles transfers from one peer. Judge decides, at chunk 0,
// whether a data-layer transfer may proceed; Data receives a finished
// data-layer transfer; File receives a finished application file (the two
// never mix: a data transfer is never surfaced as a file). Progress is
// called for every chunk of an admitted data transfer, the "sign that an
// answer is coming" request expiry is timed from. Refuse tells the sender
// to stop a transfer.
type Receiver struct {
	Judge    func(p Purpose, total uint64) error
	Data     func(p Purpose, data []byte)
	File     func(name string, data []byte)
	Progress func(p Purpose)
	Refuse   func(id ID)
	MaxTotal uint64 // zero means DefaultMaxTotal
	MaxEarly int    // zero means DefaultMaxEarly
	// ChunkSize is the most bytes a data chunk may carry, the sender's
	// ChunkSize; zero means ChunkSize. A chunk longer than it, or past the
	// last index the declared total needs, refuses the transfer.
	ChunkSize int

	mu  sync.Mutex
	rx  map[ID]*incoming
	seq uint64
	// Refusals counts refused transfers; Released the bytes buffered
	// before chunk 0 and released when it refused the transfer; Dropped the
	// bytes never buffered (chunks of refused transfers, and early chunks
	// past MaxEarly).
	Refusals, Released, Dropped int
}

type incoming struct {
	identified bool
	refused    bool
	done       bool // delivered; later repeats of its chunks are dropped
	header     Header
	purpose    *Purpose
	parts      map[uint64][]byte
	have       uint64
	last       uint64 // r.seq at the last chunk
}

// Handle takes one chunk. It returns the error that refused the transfer,
// if this chunk did.
func (r *Receiver) Handle(b []byte) error {
	c, err := ParseChunk(b)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.rx == nil {
		r.rx = map[ID]*incoming{}
	}
	in := r.rx[c.ID]
	if in == nil {
		if len(r.rx) >= MaxTracked {
			r.evict()
		}
		in = &incoming{parts: map[uint64][]byte{}}
		r.rx[c.ID] = in
	}
	r.seq++
	in.last = r.seq
	if in.refused || in.done {
		r.Dropped += len(c.Body)
		r.mu.Unlock()
		return nil
	}
	var done func()
	if c.Index == 0 {
		err = r.identify(in, c.Body)
	} else {
		err = r.store(in, c)
	}
	if err == nil && in.identified {
		// Completion is checked whenever a piece arrives once the
		// transfer is judged, chunk 0 included: the transport keeps no
		// order, so chunk 0 may be the last missing piece.
		done, err = r.settle(in)
	}
	if err != nil {
		r.refuse(in)
	}
	r.mu.Unlock()
	if err != nil && r.Refuse != nil {
		r.Refuse(c.ID)
	}
	if done != nil {
		done()
	}
	return err
}

// evict forgets the least recently active transfer.
func (r *Receiver) evict() {
	var oldest ID
	at := ^uint64(0)
	for id, in := range r.rx {
		if in.last < at {
			oldest, at = id, in.last
		}
	}
	for _, p := range r.rx[oldest].parts {
		r.Released += len(p)
	}
	delete(r.rx, oldest)
}

func (r *Receiver) refuse(in *incoming) {
	r.Refusals++
	for _, p := range in.parts {
		r.Released += len(p)
	}
	*in = incoming{refused: true, last: in.last}
}

// identify judges a transfer at chunk 0. A repeat of chunk 0 must name the
// same purpose (§The data purpose: the mark "is fixed by the chunk that
// carries it").
func (r *Receiver) identify(in *incoming, body []byte) error {
	h, err := ParseHeader(body)
	if err != nil {
		return err
	}
	if in.identified {
		if h.Envelope != in.header.Envelope || h.Total != in.header.Total || !slices.Equal(h.Field, in.header.Field) {
			return ErrPurposeRewritten
		}
		return nil
	}
	max := r.MaxTotal
	if max == 0 {
		max = DefaultMaxTotal
	}
	if h.Total > max {
		return fmt.Errorf("%w: %d bytes", ErrOverCeiling, h.Total)
	}
	if h.Envelope == EnvelopeData {
		p, err := ParsePurpose(h.Field)
		if err != nil {
			return err
		}
		if r.Judge == nil {
			return ErrUnrequested
		}
		if err := r.Judge(p, h.Total); err != nil {
			return err
		}
		in.purpose = &p
	}
	in.identified, in.header = true, h
	if in.have > h.Total {
		return ErrOverDeclared
	}
	for idx := range in.parts {
		if idx > lastIndex(h.Total, r.chunkSize()) {
			return fmt.Errorf("%w: early chunk %d past the declared size", ErrBadChunk, idx)
		}
	}
	return nil
}

// store buffers one data chunk. Before chunk 0 the transfer cannot be
// judged, so what is buffered is bounded by MaxEarly and is no sign of
// progress. An empty data chunk carries nothing and is not kept.
func (r *Receiver) store(in *incoming, c Chunk) error {
	if _, dup := in.parts[c.Index]; dup || len(c.Body) == 0 {
		return nil
	}
	size := r.chunkSize()
	if len(c.Body) > size || in.identified && c.Index > lastIndex(in.header.Total, size) {
		return fmt.Errorf("%w: chunk %d of %d bytes", ErrBadChunk, c.Index, len(c.Body))
	}
	if !in.identified {
		max := r.MaxEarly
		if max == 0 {
			max = DefaultMaxEarly
		}
		if in.have+uint64(len(c.Body)) > uint64(max) || len(in.parts) >= MaxEarlyParts {
			r.Dropped += len(c.Body)
			return nil // judged when chunk 0 arrives; the sender retries
		}
	}
	in.parts[c.Index] = slices.Clone(c.Body)
	in.have += uint64(len(c.Body))
	return nil
}

func (r *Receiver) chunkSize() int {
	if r.ChunkSize > 0 {
		return r.ChunkSize
	}
	return ChunkSize
}

// lastIndex is the index of the last data chunk of a transfer of total
// bytes cut into chunks of size.
func lastIndex(total uint64, size int) uint64 {
	return (total + uint64(size) - 1) / uint64(size)
}

// settle runs once an identified transfer's chunk arrived: it refuses more
// bytes than declared, signals progress (a data transfer only), and, when
// every byte is there, assembles the transfer and returns its delivery.
func (r *Receiver) settle(in *incoming) (func(), error) {
	if in.have > in.header.Total {
		return nil, ErrOverDeclared
	}
	var progress func()
	if in.purpose != nil && r.Progress != nil {
		p := *in.purpose
		progress = func() { r.Progress(p) }
	}
	if in.have < in.header.Total {
		return progress, nil
	}
	data := make([]byte, 0, in.have)
	for i := uint64(1); i <= uint64(len(in.parts)); i++ {
		part, ok := in.parts[i]
		if !ok {
			return nil, fmt.Errorf("%w: chunk %d missing at completion", ErrBadChunk, i)
		}
		data = append(data, part...)
	}
	h, p := in.header, in.purpose
	*in = incoming{done: true, last: in.last}
	return func() {
		if progress != nil {
			progress()
		}
		if p != nil {
			if r.Data != nil {
				r.Data(*p, data)
			}
		} else if r.File != nil {
			r.File(string(h.Field), data)
		}
	}, nil
}

// Stats returns Refusals, Released and Dropped, safely while transfers run.
func (r *Receiver) Stats() (refusals, released, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Refusals, r.Released, r.Dropped
}
