package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// SyncReport tells what one sync exchanged.
type SyncReport struct {
	// Owner is the owner synced.
	Owner OwnerID
	// Rounds is the number of request/response round trips.
	Rounds int
	// Sent and Received count messages (changes) uploaded and downloaded.
	Sent     int
	Received int
	// BytesSent and BytesReceived count protocol message bytes.
	BytesSent     int64 `json:"bytesSent"`
	BytesReceived int64 `json:"bytesReceived"`
	// Outcome is the last applyProtocolMessageAsClient outcome.
	Outcome string
	// TooLarge counts stored changes skipped as ProtocolChangeTooLargeError.
	TooLarge int
}

// SyncOptions configure Sync.
type SyncOptions struct {
	// MaxRounds bounds the exchange (default 10,000).
	MaxRounds int
	// RangesMaxSize defaults to protocol.DefaultRangesMaxSize.
	RangesMaxSize int
	// ReplyTimeout is how long to wait for the relay's reply to a request
	// (default 30 s); a relay does not answer a request it cannot decode.
	ReplyTimeout time.Duration
	// HTTPClient, when set, makes the WebSocket connection (for example
	// with the TLS roots of a private relay); nil uses http.DefaultClient.
	HTTPClient *http.Client
}

func (o SyncOptions) dialOptions() *websocket.DialOptions {
	return &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: o.HTTPClient}
}

// DefaultReplyTimeout is SyncOptions.ReplyTimeout's default.
const DefaultReplyTimeout = 30 * time.Second

func (o SyncOptions) replyTimeout() time.Duration {
	if o.ReplyTimeout <= 0 {
		return DefaultReplyTimeout
	}
	return o.ReplyTimeout
}

// ownerURL adds ?ownerId=… to a relay URL, as the TS transport does.
func ownerURL(relay string, owner protocol.OwnerID) (string, error) {
	u, err := url.Parse(relay)
	if err != nil {
		return "", fmt.Errorf("evolu client: relay URL: %w", err)
	}
	q := u.Query()
	q.Set("ownerId", owner.String())
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Sync reconciles the owner's messages in st with a relay over one
// WebSocket connection: it sends createProtocolMessageForSync, then answers
// every Response with applyProtocolMessageAsClient until the client
// converges. A relay error code, a version mismatch, or a failed write or
// sync is returned as an error with the report so far.
func Sync(ctx context.Context, relayURL string, o Owner, st *Store, opts SyncOptions) (SyncReport, error) {
	rep := SyncReport{Owner: o.id}
	st.AddOwner(o)
	u, err := ownerURL(relayURL, o.id)
	if err != nil {
		return rep, err
	}
	ws, _, err := websocket.Dial(ctx, u, opts.dialOptions())
	if err != nil {
		return rep, fmt.Errorf("evolu client: dial %s: %w", relayURL, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.MaxMaxSize)
	err = syncConn(ctx, ws, o, st, opts, &rep)
	if err == nil {
		ws.Close(websocket.StatusNormalClosure, "")
	}
	return rep, relayError(err)
}

func syncConn(ctx context.Context, ws *websocket.Conn, o Owner, st *Store, opts SyncOptions, rep *SyncReport) error {
	maxRounds := opts.MaxRounds
	if maxRounds == 0 {
		maxRounds = 10_000
	}
	req, err := protocol.NewSyncRequest(ctx, st.storage(), o.id, protocol.SubscriptionNone)
	if err != nil {
		return fmt.Errorf("evolu client: %w", err)
	}
	for rep.Rounds < maxRounds {
		if err := ws.Write(ctx, websocket.MessageBinary, req); err != nil {
			return fmt.Errorf("evolu client: send: %w", err)
		}
		rep.BytesSent += int64(len(req))
		rep.Rounds++
		reply, err := readResponse(ctx, ws, o, st, rep, opts.replyTimeout())
		if err != nil {
			return err
		}
		res, err := protocol.ApplyAsClient(ctx, st.storage(), reply, protocol.ClientOptions{WriteKey: &o.writeKey, RangesMaxSize: opts.RangesMaxSize})
		if err != nil {
			return err
		}
		rep.Outcome = res.Outcome.String()
		rep.Received += len(res.Received)
		rep.Sent += len(res.Uploaded)
		rep.TooLarge += len(res.TooLarge)
		switch res.Outcome {
		case protocol.Converged:
			return nil
		case protocol.ContinueResponse:
			req = res.Message
		default:
			return fmt.Errorf("evolu client: unexpected outcome %v", res.Outcome)
		}
	}
	return fmt.Errorf("evolu client: no convergence after %d rounds", maxRounds)
}

// readResponse reads frames until a Response for the owner arrives; a
// Broadcast for the owner is applied on the way.
func readResponse(ctx context.Context, ws *websocket.Conn, o Owner, st *Store, rep *SyncReport, timeout time.Duration) ([]byte, error) {
	rctx, cancel := context.WithTimeoutCause(ctx, timeout, &RelayError{Code: RelayNoReply, Owner: o.id, After: timeout})
	defer cancel()
	for {
		typ, msg, err := ws.Read(rctx)
		if err != nil {
			if cause := context.Cause(rctx); ctx.Err() == nil && cause != context.DeadlineExceeded && cause != nil {
				return nil, cause
			}
			return nil, fmt.Errorf("evolu client: receive: %w", err)
		}
		rep.BytesReceived += int64(len(msg))
		if typ != websocket.MessageBinary {
			continue
		}
		h, err := protocol.ParseHeader(msg)
		if err != nil {
			return msg, nil // ApplyAsClient reports it
		}
		if h.Version == protocol.Version && h.Type == protocol.Broadcast {
			if h.OwnerID == o.id {
				res, err := protocol.ApplyAsClient(ctx, st.storage(), msg, protocol.ClientOptions{WriteKey: &o.writeKey})
				if err == nil {
					rep.Received += len(res.Received)
				}
			}
			continue
		}
		return msg, nil
	}
}
