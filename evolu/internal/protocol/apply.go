package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// RelayOptions configure ApplyAsRelay.
type RelayOptions struct {
	// Subscribe and Unsubscribe apply the request's subscription flag.
	Subscribe   func(OwnerID)
	Unsubscribe func(OwnerID)
	// Broadcast receives a Broadcast message of the stored messages.
	Broadcast func(OwnerID, []byte)
	// Listeners, when set, reports whether a Broadcast for the owner would
	// reach anyone; when it reports false the message is not built.
	Listeners func(OwnerID) bool
	// TotalMaxSize and RangesMaxSize default to the protocol defaults.
	TotalMaxSize  int
	RangesMaxSize int
	// Logger receives storage failures; nil discards them.
	Logger *slog.Logger
	// version is the relay's protocol version, for tests only
	// (export_test.go); 0 means Version.
	version uint64
	// OnError, when set, is told of every reply carrying an error code.
	OnError func(OwnerID, ErrorCode)
}

func (o *RelayOptions) totalMax() int {
	if o.TotalMaxSize == 0 {
		return DefaultMaxSize
	}
	return o.TotalMaxSize
}

func (o *RelayOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// ApplyAsRelay is applyProtocolMessageAsRelay (§WriteKey validation,
// §Protocol errors): the relay's answer to one request.
//
// Order of operations: a request larger than TotalMaxSize, or one that does
// not decode completely, returns an InvalidDataError and has no effect: no
// reply, no subscription, no write, no broadcast. A request of another
// version is answered with our version and its OwnerId. Otherwise the
// subscription flag takes effect first; then a write key, if sent, is
// validated (the first key of an owner becomes its key; a storage failure is
// logged and answered ProtocolWriteError); messages without a write key are
// answered ProtocolWriteKeyError; messages are stored (quota:
// ProtocolQuotaError, failure: ProtocolWriteError) and then broadcast;
// finally the ranges are reconciled into the Response (storage failure:
// ProtocolSyncError). Every decodable request gets a reply.
func ApplyAsRelay(ctx context.Context, st RelayStorage, input []byte, opts RelayOptions) ([]byte, error) {
	if len(input) > opts.totalMax() {
		return nil, invalid(input, fmt.Errorf("request of %d bytes exceeds %d", len(input), opts.totalMax()))
	}
	m, err := Decode(input)
	if err != nil {
		return nil, err
	}
	owner := m.OwnerID
	if opts.version != 0 && opts.version != Version {
		// A relay of another version, for tests: it knows only the prefix.
		if h, err := ParseHeader(input); err == nil && h.Version != opts.version {
			return append(AppendNonNegativeInt(nil, opts.version), owner[:]...), nil
		}
	}
	if m.Version != Version {
		return VersionMismatchReply(owner), nil
	}
	if m.Type != Request {
		return nil, invalid(input, fmt.Errorf("relay received message type %d", m.Type))
	}
	switch m.Subscription {
	case SubscriptionSubscribe:
		if opts.Subscribe != nil {
			opts.Subscribe(owner)
		}
	case SubscriptionUnsubscribe:
		if opts.Unsubscribe != nil {
			opts.Unsubscribe(owner)
		}
	}
	errorReply := func(code ErrorCode) ([]byte, error) {
		if opts.OnError != nil {
			opts.OnError(owner, code)
		}
		return NewMessageBuffer(owner, BufferOptions{Type: Response, ErrorCode: code}).Bytes()
	}
	log := opts.logger()
	if m.HasWriteKey {
		ok, err := st.ValidateWriteKey(ctx, owner, m.WriteKey)
		if err != nil {
			log.ErrorContext(ctx, "evolu relay: validate write key", "owner", owner.String(), "err", err)
			return errorReply(WriteError)
		}
		if !ok {
			return errorReply(WriteKeyError)
		}
	}
	if len(m.Messages) > 0 {
		if !m.HasWriteKey {
			return errorReply(WriteKeyError)
		}
		if err := st.WriteMessages(ctx, owner, m.Messages); err != nil {
			var q *QuotaExceededError
			if errors.As(err, &q) {
				return errorReply(QuotaError)
			}
			log.ErrorContext(ctx, "evolu relay: write messages", "owner", owner.String(), "err", err)
			return errorReply(WriteError)
		}
		if opts.Broadcast != nil && (opts.Listeners == nil || opts.Listeners(owner)) {
			broadcastStored(owner, m.Messages, opts, log, ctx)
		}
	}
	out := NewMessageBuffer(owner, BufferOptions{Type: Response, TotalMaxSize: opts.TotalMaxSize, RangesMaxSize: opts.RangesMaxSize})
	if len(m.Ranges) == 0 {
		return out.Bytes()
	}
	if _, err := Sync(ctx, st, owner, m.Ranges, out, SyncOptions{
		OnChangeTooLarge: func(e *ChangeTooLargeError) {
			log.WarnContext(ctx, "evolu relay: skipped a change too large to send", "owner", owner.String(), "timestamp", e.Timestamp.String(), "size", e.Size)
		},
	}); err != nil {
		log.ErrorContext(ctx, "evolu relay: sync", "owner", owner.String(), "err", err)
		return errorReply(SyncError)
	}
	return out.Bytes()
}

func broadcastStored(owner OwnerID, msgs []EncryptedMessage, opts RelayOptions, log *slog.Logger, ctx context.Context) {
	b := NewMessageBuffer(owner, BufferOptions{Type: Broadcast, TotalMaxSize: opts.TotalMaxSize, RangesMaxSize: opts.RangesMaxSize})
	for _, msg := range msgs {
		if err := b.AddMessage(msg); err != nil {
			log.WarnContext(ctx, "evolu relay: broadcast not sent", "owner", owner.String(), "err", err)
			return
		}
	}
	out, err := b.Bytes()
	if err != nil {
		return
	}
	opts.Broadcast(owner, out)
}

// ClientOutcome is the kind of result of ApplyAsClient.
type ClientOutcome int

// Outcomes of ApplyAsClient (ApplyProtocolMessageAsClientResult).
const (
	// Converged: the response needed nothing more.
	Converged ClientOutcome = iota
	// ContinueResponse: Message must be sent to the relay.
	ContinueResponse
	// Broadcasted: a Broadcast message whose messages were written.
	Broadcasted
	// ReadOnly: messages were written, but without a write key no ranges
	// are reconciled.
	ReadOnly
)

// String names the outcome as the TS result type does.
func (o ClientOutcome) String() string {
	return [...]string{"Converged", "Response", "Broadcast", "Readonly"}[o]
}

// ClientResult is the result of ApplyAsClient.
type ClientResult struct {
	Outcome ClientOutcome
	// Message is the continuation to send (ContinueResponse).
	Message []byte
	// Uploaded are the stored messages Message carries to the relay.
	Uploaded []EncryptedMessage
	// Received are the messages written from the input.
	Received []EncryptedMessage
	// TooLarge lists changes sync skipped because they can never be sent.
	TooLarge []*ChangeTooLargeError
}

// ClientOptions configure ApplyAsClient.
type ClientOptions struct {
	// WriteKey enables reconciliation; without it the outcome is ReadOnly.
	WriteKey *WriteKey
	// RangesMaxSize defaults to DefaultRangesMaxSize.
	RangesMaxSize int
}

// ApplyAsClient is applyProtocolMessageAsClient: it applies a Response or
// Broadcast from a relay. A message of another version gives a
// *VersionError; a Response with an error code a *ResponseError; a message
// that does not decode an *InvalidDataError, and nothing is written.
// Otherwise the messages are written, then the ranges reconciled; a storage
// failure in either (the TS result's "Write" and "Sync" failures) is a
// *StorageError, with Received set when the messages were written.
func ApplyAsClient(ctx context.Context, st Storage, input []byte, opts ClientOptions) (ClientResult, error) {
	m, err := Decode(input)
	if err != nil {
		return ClientResult{}, err
	}
	if m.Version != Version {
		return ClientResult{}, &VersionError{OwnerID: m.OwnerID, Version: m.Version, IsInitiator: Version < m.Version}
	}
	if m.Type == Request {
		return ClientResult{}, invalid(input, errors.New("client received a request"))
	}
	if m.Type == Response && m.ErrorCode != NoError {
		return ClientResult{}, &ResponseError{OwnerID: m.OwnerID, Code: m.ErrorCode}
	}
	res := ClientResult{Received: m.Messages}
	if len(m.Messages) > 0 {
		if err := st.WriteMessages(ctx, m.OwnerID, m.Messages); err != nil {
			return ClientResult{}, &StorageError{Op: "Write", Err: err}
		}
	}
	if m.Type == Broadcast {
		res.Outcome = Broadcasted
		return res, nil
	}
	if opts.WriteKey == nil {
		res.Outcome = ReadOnly
		return res, nil
	}
	if len(m.Ranges) == 0 {
		res.Outcome = Converged
		return res, nil
	}
	out := NewMessageBuffer(m.OwnerID, BufferOptions{Type: Request, WriteKey: opts.WriteKey, RangesMaxSize: opts.RangesMaxSize})
	changed, err := Sync(ctx, st, m.OwnerID, m.Ranges, out, SyncOptions{
		OnMessage:        func(e EncryptedMessage) { res.Uploaded = append(res.Uploaded, e) },
		OnChangeTooLarge: func(e *ChangeTooLargeError) { res.TooLarge = append(res.TooLarge, e) },
	})
	if err != nil {
		return ClientResult{Received: m.Messages}, &StorageError{Op: "Sync", Err: err}
	}
	if !changed {
		res.Outcome = Converged
		return res, nil
	}
	if res.Message, err = out.Bytes(); err != nil {
		return ClientResult{Received: m.Messages}, &StorageError{Op: "Sync", Err: err}
	}
	res.Outcome = ContinueResponse
	return res, nil
}

// NewSyncRequest is createProtocolMessageForSync: a Request without write
// key or messages whose ranges describe the owner's whole store.
func NewSyncRequest(ctx context.Context, st Storage, owner OwnerID, sub SubscriptionFlag) ([]byte, error) {
	out := NewMessageBuffer(owner, BufferOptions{Type: Request, Subscription: sub})
	size, err := st.Size(ctx, owner)
	if err != nil {
		return nil, err
	}
	if err := splitRange(ctx, st, owner, 0, size, InfiniteUpperBound, out); err != nil {
		return nil, err
	}
	return out.Bytes()
}

// NewPushRequest is createProtocolMessageFromCrdtMessages for already
// encrypted messages: a Request with the write key and as many messages as
// fit maxSize (0: DefaultMaxSize). When not all fit it appends a Fingerprint
// range with a random fingerprint read from random, so the relay answers with
// ranges and a later round sends the rest. It returns how many were added.
func NewPushRequest(owner OwnerID, key WriteKey, msgs []EncryptedMessage, maxSize int, random io.Reader) ([]byte, int, error) {
	out := NewMessageBuffer(owner, BufferOptions{Type: Request, WriteKey: &key, TotalMaxSize: maxSize})
	n := 0
	for _, m := range msgs {
		if !out.CanAddMessage(m) {
			break
		}
		if err := out.AddMessage(m); err != nil {
			return nil, 0, err
		}
		n++
	}
	if n < len(msgs) {
		var fp Fingerprint
		if _, err := io.ReadFull(random, fp[:]); err != nil {
			return nil, 0, err
		}
		if err := out.AddFingerprint(InfiniteUpperBound, fp); err != nil {
			return nil, 0, err
		}
	}
	b, err := out.Bytes()
	return b, n, err
}

// NewUnsubscribeRequest is createProtocolMessageForUnsubscribe.
func NewUnsubscribeRequest(owner OwnerID) []byte {
	b, _ := NewMessageBuffer(owner, BufferOptions{Type: Request, Subscription: SubscriptionUnsubscribe}).Bytes()
	return b
}

// StorageError is ApplyAsClient's error when the client's storage failed:
// Op is "Write" (storing the received messages) or "Sync" (reconciling).
type StorageError struct {
	Op  string
	Err error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("evolu: client storage: %s: %v", e.Op, e.Err)
}

// Unwrap returns the storage's error.
func (e *StorageError) Unwrap() error { return e.Err }
