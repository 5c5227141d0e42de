package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// RunOptions configure Run.
type RunOptions struct {
	SyncOptions
	// OnSync is called after every reconciliation that converged.
	OnSync func(SyncReport)
	// OnBroadcast is called with the messages of every applied Broadcast.
	OnBroadcast func(received int)
	// MinBackoff and MaxBackoff bound the wait before a reconnect
	// (defaults 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// Logger receives connection failures; nil discards them.
	Logger *slog.Logger
	// PollInterval is how often Run checks the store for changes written
	// by another process (default 1 s), which it then pushes.
	PollInterval time.Duration
}

// Run keeps one owner in sync with a relay until ctx is done, like the TS
// client's WebSocket transport: it connects, subscribes and reconciles,
// applies the relay's broadcasts as they come, reconciles again after each
// local change (Store.Put), and reconnects with exponential backoff when the
// connection fails. A relay error code or a version mismatch ends Run with
// that error, since retrying cannot help. Run returns nil when ctx is done.
func Run(ctx context.Context, relayURL string, o Owner, st *Store, opts RunOptions) error {
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st.AddOwner(o)
	u, err := ownerURL(relayURL, o.id)
	if err != nil {
		return err
	}
	backoff := opts.MinBackoff
	for {
		err := runOnce(ctx, u, o, st, opts)
		if ctx.Err() != nil {
			return nil
		}
		if err = relayError(err); permanent(err) {
			return err
		}
		log.WarnContext(ctx, "evolu client: connection lost", "owner", o.id.String(), "err", err, "retry", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, opts.MaxBackoff)
	}
}

// permanent reports errors a reconnect cannot fix.
func permanent(err error) bool {
	var re *RelayError
	return errors.As(err, &re) && re.Code != RelayNoReply
}

func runOnce(ctx context.Context, u string, o Owner, st *Store, opts RunOptions) error {
	ws, _, err := websocket.Dial(ctx, u, opts.dialOptions())
	if err != nil {
		return fmt.Errorf("evolu client: dial: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.MaxMaxSize)
	frames := make(chan []byte)
	readErr := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			_, msg, err := ws.Read(rctx)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- msg:
			case <-rctx.Done():
				return
			}
		}
	}()
	s := &session{ctx: ctx, ws: ws, o: o, st: st, opts: opts}
	if err := s.start(); err != nil {
		return err
	}
	poll := time.NewTicker(opts.PollInterval)
	defer poll.Stop()
	timeout := opts.replyTimeout()
	for {
		var noReply <-chan time.Time
		if s.active {
			noReply = time.After(time.Until(s.sent.Add(timeout)))
		}
		select {
		case <-ctx.Done():
			ws.Close(websocket.StatusNormalClosure, "")
			return nil
		case err := <-readErr:
			return fmt.Errorf("evolu client: receive: %w", err)
		case <-noReply:
			return &RelayError{Code: RelayNoReply, Owner: s.o.id, After: timeout}
		case <-poll.C:
			changed, err := st.storage().ExternalChange(ctx, o.id)
			if err != nil {
				return err
			}
			if changed {
				if err := s.changed(); err != nil {
					return err
				}
			}
		case <-st.Changed():
			if err := s.changed(); err != nil {
				return err
			}
		case msg := <-frames:
			if err := s.handle(msg); err != nil {
				return err
			}
		}
	}
}

// changed starts a reconciliation for a local change, or another one after
// the current.
func (s *session) changed() error {
	if s.active {
		s.again = true
		return nil
	}
	return s.start()
}

// session is one connection's reconciliation state.
type session struct {
	ctx    context.Context
	ws     *websocket.Conn
	o      Owner
	st     *Store
	opts   RunOptions
	active bool // a reconciliation is in progress
	again  bool // a local change arrived during it
	rep    SyncReport
	sent   time.Time // when the last request was sent
}

func (s *session) start() error {
	req, err := protocol.NewSyncRequest(s.ctx, s.st.storage(), s.o.id, protocol.SubscriptionSubscribe)
	if err != nil {
		return err
	}
	s.active, s.again = true, false
	s.rep = SyncReport{Owner: s.o.id}
	return s.send(req)
}

func (s *session) send(b []byte) error {
	s.sent = time.Now()
	s.rep.Rounds++
	s.rep.BytesSent += int64(len(b))
	if err := s.ws.Write(s.ctx, websocket.MessageBinary, b); err != nil {
		return fmt.Errorf("evolu client: send: %w", err)
	}
	return nil
}

func (s *session) handle(msg []byte) error {
	if h, err := protocol.ParseHeader(msg); err == nil && h.Version == protocol.Version && h.Type == protocol.Broadcast {
		if h.OwnerID != s.o.id {
			return nil
		}
		res, err := protocol.ApplyAsClient(s.ctx, s.st.storage(), msg, protocol.ClientOptions{WriteKey: &s.o.writeKey})
		if err != nil {
			return err
		}
		if s.opts.OnBroadcast != nil {
			s.opts.OnBroadcast(len(res.Received))
		}
		return nil
	}
	s.rep.BytesReceived += int64(len(msg))
	res, err := protocol.ApplyAsClient(s.ctx, s.st.storage(), msg, protocol.ClientOptions{WriteKey: &s.o.writeKey, RangesMaxSize: s.opts.RangesMaxSize})
	if err != nil {
		return err
	}
	s.rep.Outcome = res.Outcome.String()
	s.rep.Received += len(res.Received)
	s.rep.Sent += len(res.Uploaded)
	s.rep.TooLarge += len(res.TooLarge)
	switch res.Outcome {
	case protocol.ContinueResponse:
		return s.send(res.Message)
	case protocol.Converged:
		s.active = false
		if s.opts.OnSync != nil {
			s.opts.OnSync(s.rep)
		}
		if s.again {
			return s.start()
		}
		return nil
	}
	return fmt.Errorf("evolu client: unexpected outcome %v", res.Outcome)
}
