package pairing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/hubdesc"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Offer is the showing device's side of pairing (§6.3): the QR payload,
// and the pairing channel watched while it is shown. Each request that
// arrives is answered with a signed challenge, at most three per offer;
// approving one hands the identity to that request's device and ends the
// offer. An Offer is safe for concurrent use.
type Offer struct {
	id      *suite.Identity
	ch      *Channel
	payload string
	exp     time.Time

	next sync.Mutex // serializes Next (and the channel reads)
	mu   sync.Mutex // guards what follows
	reqs map[[32]byte]*Request
	// unposted holds requests whose challenge is not on the hub yet;
	// queue, answered requests Next has not returned yet.
	unposted   []*Request
	queue      []*Request
	approved   *Request
	reply      hub.ID // the approved reply's message
	closed     bool
	cancelNext context.CancelFunc // ends a Next in progress (Close)
}

// Request is a device asking to be added (§6.3 step 1), already answered
// with a challenge.
type Request struct {
	o         *Offer
	name      string
	ek        [32]byte
	n         [16]byte // the challenge's nonce
	code      string
	challenge hub.ID // the message of its challenge
	declined  bool   // guarded by o.mu
	decline   hub.ID // the message telling the new device no; guarded by o.mu
}

// NewOffer starts an offer of the identity of user secret us on s (a hub
// connection the offer owns and closes): a random pairing secret P and
// the QR payload with hub descriptor h (zero when the app brings its own
// binding), the user ID and an expiry ttl from now.
func NewOffer(s hub.Store, us [32]byte, h hubdesc.Desc, ttl time.Duration, log *slog.Logger) (*Offer, error) {
	id := suite.NewIdentity(us)
	pl := Payload{Hub: h, UID: id.UID, Exp: time.Now().Add(ttl)}
	if _, err := rand.Read(pl.P[:]); err != nil {
		return nil, fmt.Errorf("%w: no randomness for a pairing code: %w", ErrLocal, err)
	}
	payload, err := pl.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: cannot write the pairing code: %w", ErrLocal, err)
	}
	return &Offer{
		id: id, ch: NewChannel(s, pl.P, log), payload: payload, exp: pl.Exp,
		reqs: map[[32]byte]*Request{},
	}, nil
}

// Payload is the text of the QR code to show.
func (o *Offer) Payload() string { return o.payload }

// Expires is when the QR code stops working.
func (o *Offer) Expires() time.Time { return o.exp }

// Next waits for the next device asking to be added, answers it with a
// signed challenge (§6.3 step 2) and returns it, its code computed. Only
// the first three requests of an offer are answered; later ones are
// ignored. Next ends at the offer's expiry with ErrExpired, after an
// approval with ErrUsed, after Close with ErrClosed, or when ctx ends
// (ErrStopped).
func (o *Offer) Next(ctx context.Context) (*Request, error) {
	o.next.Lock()
	defer o.next.Unlock()
	if r, err := o.pop(); r != nil || err != nil {
		return r, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.mu.Lock()
	o.cancelNext = cancel
	o.mu.Unlock()
	var got *Request
	err := o.ch.wait(ctx, o.exp, func(msgs []Msg) (bool, error) {
		if err := o.take(ctx, msgs); err != nil {
			return false, err
		}
		var err error
		got, err = o.pop()
		return got != nil, err
	})
	switch {
	case errors.Is(err, errDeadline):
		return nil, fmt.Errorf("%w: %w", ErrExpired, err)
	case err != nil:
		if _, uerr := o.pop(); uerr != nil {
			return nil, uerr // closed or approved meanwhile
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrStopped, err)
		}
		return nil, err
	}
	return got, nil
}

// take answers the requests among msgs.
func (o *Offer) take(ctx context.Context, msgs []Msg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.usable(); err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Kind == KindRequest {
			if err := o.answer(m); err != nil {
				return err
			}
		}
	}
	return o.flush(ctx)
}

// pop returns the first request Next has not returned yet, or the error
// that ends the offer.
func (o *Offer) pop() (*Request, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.usable(); err != nil {
		return nil, err
	}
	if len(o.queue) == 0 {
		return nil, nil
	}
	r := o.queue[0]
	o.queue = o.queue[1:]
	return r, nil
}

// usable reports why the offer is over, if it is. o.mu is held.
func (o *Offer) usable() error {
	switch {
	case o.closed:
		return ErrClosed
	case o.approved != nil:
		return ErrUsed
	case !time.Now().Before(o.exp):
		return ErrExpired
	}
	return nil
}

// answer takes a request not seen before, if the offer has answers left
// (§6.3 step 2: at most three per QR code), and prepares its challenge.
// o.mu is held.
func (o *Offer) answer(m Msg) error {
	if _, dup := o.reqs[m.EK]; dup {
		return nil // the same key asked again: it has its challenge
	}
	if len(o.reqs) >= maxChallenges {
		o.ch.log.Warn("pairing: request beyond the third for this code; not answered", "name", m.Name)
		return nil
	}
	r := &Request{o: o, name: m.Name, ek: m.EK}
	if _, err := rand.Read(r.n[:]); err != nil {
		return fmt.Errorf("%w: no randomness for a pairing challenge: %w", ErrLocal, err)
	}
	r.code = suite.PairCode(o.ch.p.Secret, m.EK, r.n)
	o.reqs[m.EK] = r
	o.unposted = append(o.unposted, r)
	return nil
}

// flush posts the prepared challenges. One that fails stays prepared,
// with the same nonce, and is posted again at the next read, so a retry
// after a lost answer shows the same code. Only a refused credential or a
// local failure is returned. o.mu is held.
func (o *Offer) flush(ctx context.Context) error {
	for len(o.unposted) > 0 {
		r := o.unposted[0]
		c := Msg{Kind: KindChallenge, EK: r.ek, N: r.n}
		copy(c.Sig[:], ed25519.Sign(o.id.SignKey, suite.PairChallengeSigInput(o.ch.p.Secret, r.ek, r.n)))
		id, err := o.ch.Post(ctx, c)
		switch {
		case err != nil && (errors.Is(err, hub.ErrAuth) || errors.Is(err, ErrLocal)):
			return err
		case err != nil:
			o.ch.log.Info("pairing: posting a challenge failed; trying again", "err", err)
			return nil
		}
		r.challenge = id
		o.unposted = o.unposted[1:]
		o.queue = append(o.queue, r)
	}
	return nil
}

// Name is the name the new device gave (any text: whoever saw the QR code
// can post a request under any name, §6.3).
func (r *Request) Name() string { return r.name }

// Code is the six-digit code both devices show (§6.3 step 3).
func (r *Request) Code() string { return r.code }

// Approve hands the identity to the requesting device (§6.3 step 4): the
// user secret, HPKE-sealed to its one-time key, posted on the pairing
// channel. It ends the offer: one approval per QR code. It fails with
// ErrExpired after the offer's expiry, ErrDeclined for a declined request
// and ErrUsed or ErrClosed for an offer already used or closed.
func (r *Request) Approve(ctx context.Context) error {
	o := r.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.usable(); err != nil {
		return err
	}
	if r.declined {
		return ErrDeclined
	}
	sealed, err := suite.SealPairReply(o.id, r.ek)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	id, err := o.ch.Post(ctx, Msg{Kind: KindReply, EK: r.ek, Sealed: sealed})
	if err != nil {
		return err
	}
	o.approved, o.reply = r, id
	if o.cancelNext != nil {
		o.cancelNext() // a Next waiting elsewhere ends: the offer is used
	}
	return nil
}

// Decline refuses the request: it can no longer be approved, whatever
// Decline returns. It then tells the new device, with a decline signed by
// the user's key (docs/decisions/tandem-pairing-refusal.md), so that it
// stops at once instead of at the expiry. An error means the new device
// could not be told (the hub's error, ErrLocal, or ErrClosed after
// Close); it then ends at the expiry. Declining again after a decline was
// posted posts nothing more; an approved request cannot be declined
// (ErrUsed).
func (r *Request) Decline(ctx context.Context) error {
	o := r.o
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.approved == r:
		return ErrUsed
	case r.decline != "":
		return nil
	}
	r.declined = true
	if o.closed {
		return ErrClosed
	}
	m := Msg{Kind: KindDecline, EK: r.ek}
	copy(m.Sig[:], ed25519.Sign(o.id.SignKey, suite.PairDeclineSigInput(o.ch.p.Secret, r.ek, r.n)))
	id, err := o.ch.Post(ctx, m)
	if err != nil {
		return err
	}
	r.decline = id
	return nil
}

// Close ends the offer (a Next in progress returns ErrClosed) and removes
// its messages from the hub: all of them if nothing was approved; after an
// approval all but the approved challenge and the reply, and for a
// declined request its challenge and decline, which the new device
// removes once it has read them. It closes the hub connection.
// Close is safe to call more than once.
func (o *Offer) Close(ctx context.Context) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	if o.cancelNext != nil {
		o.cancelNext()
	}
	keep := map[hub.ID]bool{}
	if o.approved != nil {
		keep[o.approved.challenge], keep[o.reply] = true, true
	}
	for _, r := range o.reqs { // the new device removes them once it has read them
		if r.decline != "" {
			keep[r.challenge], keep[r.decline] = true, true
		}
	}
	o.mu.Unlock()
	o.next.Lock() // the Next in progress has returned
	defer o.next.Unlock()
	o.ch.destroy(ctx, keep)
	return o.ch.store.Close()
}
