// Package replica runs one 1:1 data-sync-v1 space over one authenticated
// transport.Conn: the exchange session, attachment carriage and the media
// path, multiplexed on the link.
//
// Each message on the Conn is one tagged plaintext:
//
//	'F' frame       a __DATA_V1__ frame (datasync/frame)
//	'C' chunk       a media-path chunk (datasync/internal/media)
//	'R' id(16)      the receiver refuses that transfer
//
// The space is the Conn's authenticated peer: a Link is built for the
// engine that belongs to conn.Peer(), and no frame can name another.
package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// Message tags on the link.
const (
	TagFrame  = 'F'
	TagChunk  = 'C'
	TagRefuse = 'R'
)

// DefaultMaxRecord is the largest document that takes the media path: the
// bound of one sealed protocol-state record in this implementation.
const DefaultMaxRecord = 8 << 20

// Options configures a [Link].
type Options struct {
	// Caps are the entries the peer advertised.
	Caps frame.Caps
	// Interval between anti-entropy offers; zero means one offer at start.
	Interval time.Duration
	// MaxRecord bounds documents on the media path, both ways; zero means
	// DefaultMaxRecord.
	MaxRecord int
	// Blobs stores attachment bytes; nil means an in-memory store.
	Blobs attach.Store
	// Acts is the attachment holder's memory of what it acted on; share
	// one among the links of a space so that a peer's reconnections and
	// concurrent links count together. Nil means the link's own.
	Acts *attach.Acts
	// Report receives documents that cannot replicate.
	Report func(exchange.Report)
}

// Link is one 1:1 space replicating over one Conn.
type Link struct {
	conn    transport.Conn
	opts    Options
	space   *exchange.Space
	session *exchange.Session
	fetcher *attach.Fetcher
	holder  *attach.Holder
	tx      *media.Sender
	rx      *media.Receiver
	wg      sync.WaitGroup

	sent atomic.Int64 // documents sent: deltas, snaps, media-path snapshots

	mu      sync.Mutex
	owed    []exchange.Out // what a finished media transfer owes, sent by dispatch
	refused []media.ID     // transfers the receiver refused, told by dispatch
}

// New builds the link for a fresh space over eng with conn's peer; the
// space's reports go to o.Report.
func New(eng engine.Engine, conn transport.Conn, o Options) *Link {
	return NewInSpace(&exchange.Space{Engine: eng, Report: o.Report}, conn, o)
}

// NewInSpace builds the link for sp with conn's peer. Use it to keep one
// space, with its peer-named documents and quarantine ledger, across
// successive connections: sp's own Report receives the exchange's reports,
// and o.Report (or sp.Report when nil) the link's.
func NewInSpace(sp *exchange.Space, conn transport.Conn, o Options) *Link {
	if o.MaxRecord <= 0 {
		o.MaxRecord = DefaultMaxRecord
	}
	if o.Blobs == nil {
		o.Blobs = &attach.MemStore{}
	}
	if o.Report == nil {
		o.Report = sp.Report
	}
	l := &Link{conn: conn, opts: o}
	l.space = sp
	v := sp.Engine.Encoding().V
	l.fetcher = &attach.Fetcher{Store: o.Blobs, Version: v}
	l.tx = &media.Sender{Send: func(ctx context.Context, c []byte) error {
		return conn.Send(ctx, append([]byte{TagChunk}, c...))
	}}
	l.holder = &attach.Holder{Store: o.Blobs, Version: v, Acts: o.Acts,
		Send: func(ctx context.Context, _ string, p media.Purpose, b []byte) error { return l.tx.SendData(ctx, p, b) }}
	l.rx = &media.Receiver{Judge: l.judge, Data: l.data, Refuse: l.refuse, Progress: func(p media.Purpose) {
		if p.P == media.PurposeAttachment {
			l.fetcher.Progress(p.Hash)
		}
	}}
	l.session = exchange.NewSession(l.space, exchange.PeerID(conn.Peer()), exchange.Options{
		Caps: o.Caps, MaxRecordBytes: o.MaxRecord,
		Blobs: &attach.Carriage{Fetcher: l.fetcher, Holder: l.holder}})
	return l
}

// Stats is what a link has carried so far.
type Stats struct {
	// Sent counts documents sent: deltas, snaps and media-path snapshots.
	Sent int
	// Received counts the peer's changes and snapshots applied.
	Received int
}

// Stats returns what the link has carried so far; safe while it runs.
func (l *Link) Stats() Stats {
	return Stats{Sent: int(l.sent.Load()), Received: l.session.Applied()}
}

// Space returns the link's space (its engine and peer-named count).
func (l *Link) Space() *exchange.Space { return l.space }

// Blobs returns the attachment store.
func (l *Link) Blobs() attach.Store { return l.opts.Blobs }

// judge decides at chunk 0 (§Attachments, §Documents too large for a frame).
// Attachment bytes need an outstanding request; a snapshot is unsolicited by
// design and is bounded by the record size instead.
func (l *Link) judge(p media.Purpose, total uint64) error {
	switch p.P {
	case media.PurposeAttachment:
		return l.fetcher.Judge(p, total)
	case media.PurposeSnapshot:
		if total > uint64(l.opts.MaxRecord) {
			return fmt.Errorf("%w: %d bytes", media.ErrOverRecord, total)
		}
		return nil
	}
	return media.ErrUnrequested
}

// data takes a finished data-layer transfer; it runs inside rx.Handle, on
// the goroutine of dispatch, which sends what it owes.
func (l *Link) data(p media.Purpose, b []byte) {
	switch p.P {
	case media.PurposeAttachment:
		_ = l.fetcher.Complete(p.Hash, b) // a mismatch is discarded; the request stays
	case media.PurposeSnapshot:
		outs := l.session.ImportSnapshot(p.Doc, b)
		l.mu.Lock()
		l.owed = append(l.owed, outs...)
		l.mu.Unlock()
	}
}

// refuse records a transfer the receiver refused; dispatch tells the peer.
func (l *Link) refuse(id media.ID) {
	l.mu.Lock()
	l.refused = append(l.refused, id)
	l.mu.Unlock()
}

// afterChunk sends what handling a chunk produced: refusals, then what a
// finished transfer owes.
func (l *Link) afterChunk(ctx context.Context) {
	l.mu.Lock()
	owed, refused := l.owed, l.refused
	l.owed, l.refused = nil, nil
	l.mu.Unlock()
	for _, id := range refused {
		if err := l.conn.Send(ctx, append([]byte{TagRefuse}, id[:]...)); err != nil {
			l.reportSend(ctx, "", fmt.Errorf("datasync/replica: refusal of a transfer not sent: %w", err))
		}
	}
	l.send(ctx, owed)
}

// Run replicates until ctx ends or the link fails. It sends an offer at
// start and every Interval, and answers everything that arrives.
func (l *Link) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		l.wg.Wait()
	}()
	l.wg.Add(1)
	go func() { defer l.wg.Done(); l.holder.Run(ctx) }()
	l.send(ctx, l.session.Offer())
	if l.opts.Interval > 0 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			t := time.NewTicker(l.opts.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					l.send(ctx, l.session.Offer())
					l.fetcher.Expire()
				}
			}
		}()
	}
	for {
		msg, err := l.conn.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.dispatch(ctx, msg)
	}
}

func (l *Link) dispatch(ctx context.Context, msg []byte) {
	if len(msg) == 0 {
		return
	}
	switch msg[0] {
	case TagFrame:
		l.send(ctx, l.session.Receive(msg[1:]))
	case TagChunk:
		_ = l.rx.Handle(msg[1:]) // a refusal is told to the peer by afterChunk
		l.afterChunk(ctx)
	case TagRefuse:
		var id media.ID
		if len(msg) == 1+len(id) {
			copy(id[:], msg[1:])
			l.tx.Refused(id)
		}
	}
}

// send delivers outs; a snapshot for the media path runs on its own
// goroutine, owned by the link. No failure is dropped in silence: each is
// reported (with the document the frame names), unless the link is
// shutting down, and the first is returned.
func (l *Link) send(ctx context.Context, outs []exchange.Out) error {
	var first error
	for _, o := range outs {
		if o.Snapshot != nil {
			s := *o.Snapshot
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				err := l.tx.SendData(ctx, media.Purpose{P: media.PurposeSnapshot, Doc: s.Doc}, s.Blob)
				switch {
				case errors.Is(err, media.ErrInFlight):
					// the transfer already crossing carries it
				case err != nil:
					l.reportSend(ctx, s.Doc, err)
				default:
					l.sent.Add(1)
				}
			}()
			continue
		}
		w, err := frame.Marshal(*o.Frame)
		if err == nil {
			err = l.conn.Send(ctx, append([]byte{TagFrame}, w...))
		}
		if err != nil {
			l.reportSend(ctx, o.Frame.Doc, fmt.Errorf("datasync/replica: %s frame not sent: %w", o.Frame.Kind, err))
			if first == nil {
				first = err
			}
		} else if o.Frame.Kind == frame.KindDelta || o.Frame.Kind == frame.KindSnap {
			l.sent.Add(1)
		}
	}
	return first
}

// reportSend reports a send that failed, unless the link is ending (ctx
// ended, or the connection closed: Run returns that).
func (l *Link) reportSend(ctx context.Context, doc string, err error) {
	if ctx.Err() != nil || l.opts.Report == nil || errors.Is(err, transport.ErrClosed) || errors.Is(err, net.ErrClosed) {
		return
	}
	l.opts.Report(exchange.Report{Peer: exchange.PeerID(l.conn.Peer()), Doc: doc, Err: err})
}

// Commit sends the local commit of doc (its changes since before, the
// version it had before the local edits). If it cannot be sent, the next
// frame naming doc flushes it.
func (l *Link) Commit(ctx context.Context, doc string, before []byte) error {
	if err := l.send(ctx, l.session.Commit(doc, before)); err != nil {
		l.session.Unsent(doc, before)
		return err
	}
	return nil
}

// Fetch asks the peer for the attachment with this hash; the bytes land in
// the blob store, never as a received file.
//
// The peer's entries are checked first and the request recorded after: a
// fetch refused because the peer lacks entry 3 leaves no request behind,
// so nothing it records can admit bytes for that hash.
func (l *Link) Fetch(ctx context.Context, hash string) error {
	ask := frame.Frame{V: l.space.Engine.Encoding().V, Kind: frame.KindNeedBlob, Hash: hash}
	if err := frame.Gate(l.opts.Caps, ask, l.space.Engine.Encoding().Entry, false); err != nil {
		return err
	}
	f, err := l.fetcher.Fetch(hash)
	if err != nil || f == nil {
		return err
	}
	w, err := frame.Marshal(*f)
	if err != nil {
		return err
	}
	return l.conn.Send(ctx, append([]byte{TagFrame}, w...))
}

// FetchStatus is nil while a fetch is outstanding or done, and why it ended
// otherwise (for example attach.ErrGone).
func (l *Link) FetchStatus(hash string) error { return l.fetcher.Status(hash) }
