package pairing

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// replySlack is how long after the QR code's expiry the new device still
// looks for a reply the showing device approved just before it
// (docs/decisions/tandem-pairing.md).
const replySlack = 5 * time.Second

// Join is the new device's side of pairing (§6.3 steps 1, 3 and 5): the
// request posted with a one-time X25519 key, the code shown once the
// challenge's signature checks against the user ID in the QR code, and
// the user secret taken from the approval. A Join is safe for concurrent
// use.
type Join struct {
	pl    Payload
	ek    *ecdh.PrivateKey
	ch    *Channel
	slack time.Duration

	waiting sync.Mutex // serializes Code and Complete
	mu      sync.Mutex // guards what follows
	code    string
	n       [16]byte // the nonce of the challenge the code is from
	done    bool     // the device was installed
	failed  error    // the pairing was interfered with or declined: it cannot go on
	closed  bool
	cancel  context.CancelFunc // ends a wait in progress (Close)

	// got holds the channel's messages for this device's key read so
	// far: Code's read may already bring the reply Complete waits for.
	got []Msg
}

// NewJoin makes a one-time key pair and posts the request under name on
// s (a hub connection the join owns and closes), for the QR payload pl.
// The caller checked pl's expiry and hub, and the name (NameOK).
func NewJoin(ctx context.Context, s hub.Store, pl Payload, name string, log *slog.Logger) (*Join, error) {
	ek, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("%w: no randomness for a pairing key: %w", ErrLocal, err)
	}
	j := &Join{pl: pl, ek: ek, ch: NewChannel(s, pl.P, log), slack: replySlack}
	if _, err := j.ch.Post(ctx, Msg{Kind: KindRequest, Name: name, EK: j.Pub()}); err != nil {
		return nil, err
	}
	return j, nil
}

// keep adds the messages for this device's key to those read before and
// returns them all (bounded by the bytes the channel reads, maxPairBytes).
func (j *Join) keep(fresh []Msg) []Msg {
	me := j.Pub()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range fresh {
		if m.EK == me && m.Kind != KindRequest {
			j.got = append(j.got, m)
		}
	}
	return j.got
}

// Pub is this device's one-time public key, the request's "ek".
func (j *Join) Pub() [32]byte { return [32]byte(j.ek.PublicKey().Bytes()) }

// Key is this device's one-time private key (tests: a reply must not
// open with an attacker's).
func (j *Join) Key() *ecdh.PrivateKey { return j.ek }

// Payload is the QR payload the join was made from.
func (j *Join) Payload() Payload { return j.pl }

// NoSlack makes the join stop looking for a reply at the QR code's
// expiry (tests of an attacker's join).
func (j *Join) NoSlack() { j.slack = 0 }

// Code waits for the showing device's challenge to this request and
// returns the six-digit code to show (§6.3 step 3), only once the
// challenge's signature checks against the user ID in the QR code. A
// challenge to this request that does not check means someone put it in
// the real one's place: Code then shows nothing and fails with
// ErrInterfered. It fails with ErrExpired at the QR code's expiry.
func (j *Join) Code(ctx context.Context) (string, error) {
	j.waiting.Lock()
	defer j.waiting.Unlock()
	ctx, err := j.begin(ctx)
	if err != nil {
		return "", err
	}
	defer j.end()
	return j.waitCode(ctx)
}

// begin starts a wait that Close can end; end finishes it.
func (j *Join) begin(ctx context.Context) (context.Context, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return nil, err
	}
	ctx, j.cancel = context.WithCancel(ctx)
	return ctx, nil
}

func (j *Join) end() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancel()
	j.cancel = nil
}

// waitCode waits for the challenge; j.waiting is held.
func (j *Join) waitCode(ctx context.Context) (string, error) {
	j.mu.Lock()
	code := j.code
	j.mu.Unlock()
	if code != "" {
		return code, nil
	}
	me := j.Pub()
	var n [16]byte
	err := j.ch.wait(ctx, j.pl.Exp, func(fresh []Msg) (bool, error) {
		msgs := j.keep(fresh)
		forged := false
		for _, m := range msgs {
			if m.Kind != KindChallenge || m.EK != me {
				continue
			}
			if suite.VerifyStrict(j.pl.UID[:], suite.PairChallengeSigInput(j.pl.P, me, m.N), m.Sig[:]) {
				code, n = suite.PairCode(j.pl.P, me, m.N), m.N
				return true, nil
			}
			forged = true
		}
		if forged {
			j.ch.log.Warn("pairing: challenge with a bad signature; no code shown")
			j.mu.Lock()
			j.failed = ErrInterfered
			j.mu.Unlock()
			return false, ErrInterfered
		}
		return false, nil
	})
	if err := j.waitErr(ctx, err); err != nil {
		return "", err
	}
	j.mu.Lock()
	j.code, j.n = code, n
	j.mu.Unlock()
	return code, nil
}

// waitErr turns the end of a wait into the error to return.
func (j *Join) waitErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errDeadline):
		return fmt.Errorf("%w: %w", ErrExpired, err)
	case ctx.Err() != nil:
		j.mu.Lock()
		defer j.mu.Unlock()
		if uerr := j.usable(); uerr != nil {
			return uerr
		}
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return err
}

// usable reports why the pairing is over, if it is. j.mu is held.
func (j *Join) usable() error {
	switch {
	case j.closed:
		return ErrClosed
	case j.done:
		return ErrUsed
	case j.failed != nil:
		return j.failed
	}
	return nil
}

// Complete waits for the showing device's approval (§6.3 steps 4 and 5),
// after the code (it waits for that first if Code was not called), until
// shortly after the QR code's expiry. The reply must hold the secret of
// the user ID in the QR code; replies that don't are ignored. A decline
// signed with the user's key ends it at once with ErrDeclined, and the
// join's messages are removed from the hub; one that does not check is
// ignored (docs/decisions/tandem-pairing-refusal.md). It then
// calls install with the user secret; when install succeeds the join is
// done, its messages are removed from the hub and its connection closed.
// An error of install is returned as it is, and the join stays usable.
func (j *Join) Complete(ctx context.Context, install func(secret [32]byte) error) error {
	j.waiting.Lock()
	defer j.waiting.Unlock()
	ctx, err := j.begin(ctx)
	if err != nil {
		return err
	}
	defer j.end()
	if _, err := j.waitCode(ctx); err != nil {
		return err
	}
	me := j.Pub()
	var secret [32]byte
	checked := 0 // replies before it were opened already
	err = j.ch.wait(ctx, j.pl.Exp.Add(j.slack), func(fresh []Msg) (bool, error) {
		msgs := j.keep(fresh)
		msgs, checked = msgs[checked:], len(msgs)
		for _, m := range msgs {
			if m.Kind == KindDecline && m.EK == me && j.declined(ctx, m) {
				return false, ErrDeclined
			}
			if m.Kind != KindReply || m.EK != me {
				continue
			}
			id, err := suite.OpenPairReply(j.ek, j.pl.UID, m.Sealed)
			if err != nil {
				j.ch.log.Warn("pairing: reply that does not open to this user; ignored", "err", err)
				continue
			}
			secret = id.Secret
			return true, nil
		}
		return false, nil
	})
	if err := j.waitErr(ctx, err); err != nil {
		return err
	}
	if err := install(secret); err != nil {
		return err
	}
	j.mu.Lock()
	j.done = true
	j.mu.Unlock()
	j.ch.destroy(ctx, nil)
	j.ch.store.Close()
	return nil
}

// declined reports whether m, a decline for this device's key, is signed
// with the user's key over the challenge this device answered; if so the
// join is over and its messages (the request, the challenge and the
// decline) are removed from the hub. j.waiting is held.
func (j *Join) declined(ctx context.Context, m Msg) bool {
	me := j.Pub()
	j.mu.Lock()
	n := j.n
	j.mu.Unlock()
	if !suite.VerifyStrict(j.pl.UID[:], suite.PairDeclineSigInput(j.pl.P, me, n), m.Sig[:]) {
		j.ch.log.Warn("pairing: decline with a bad signature; ignored")
		return false
	}
	j.mu.Lock()
	j.failed = ErrDeclined
	ids := make([]hub.ID, 0, len(j.got))
	for _, g := range j.got {
		ids = append(ids, g.ID)
	}
	j.mu.Unlock()
	j.ch.destroyMine(ctx)
	j.ch.destroyIDs(ctx, ids)
	return true
}

// Close abandons the pairing (a Code or Complete in progress returns
// ErrClosed): the request is removed from the hub and the connection
// closed. After Complete succeeded it does nothing.
func (j *Join) Close(ctx context.Context) error {
	j.mu.Lock()
	if j.closed || j.done {
		j.closed = true
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	if j.cancel != nil {
		j.cancel()
	}
	j.mu.Unlock()
	j.waiting.Lock() // the wait in progress has returned
	defer j.waiting.Unlock()
	j.ch.destroyMine(ctx)
	return j.ch.store.Close()
}
