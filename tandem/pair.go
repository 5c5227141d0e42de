package tandem

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The §13.3 messages of pairing.
const (
	msgCodeExpired = "This code has expired. Ask for a new one."
	msgOtherHub    = "This invite is for a different sync hub. Ferry can only use one hub at a time."
)

// PairingOffer is "Add a device" on a device that has the identity (§6.3):
// a QR code valid for two minutes, and the pairing channel watched while
// it is shown. Each request that arrives is answered with a signed
// challenge, at most three per offer; approving one hands the identity to
// that request's device and ends the offer. A PairingOffer is safe for
// concurrent use; Close it when the QR code leaves the screen. The wire
// details the spec leaves open: docs/decisions/tandem-pairing.md.
type PairingOffer struct {
	id      *suite.Identity
	ch      *pairChannel
	payload string
	exp     time.Time

	next sync.Mutex // serializes Next (and the channel reads)
	mu   sync.Mutex // guards what follows
	reqs map[[32]byte]*PairingRequest
	// unposted holds requests whose challenge is not on the hub yet;
	// queue, answered requests Next has not returned yet.
	unposted   []*PairingRequest
	queue      []*PairingRequest
	approved   *PairingRequest
	reply      hub.ID // the approved reply's message
	closed     bool
	cancelNext context.CancelFunc // ends a Next in progress (Close)
}

// PairingRequest is a device asking to be added (§6.3 step 1), already
// answered with a challenge: the app shows "Add 'Name'? Code 483 920" and
// approves only if the new device shows the same code.
type PairingRequest struct {
	o         *PairingOffer
	name      string
	ek        [32]byte
	n         [16]byte // the challenge's nonce
	code      string
	challenge hub.ID // the message of its challenge
	declined  bool   // guarded by o.mu
}

// AddDevice starts pairing a new device (§6.3, §13.2 "Add a device"):
// a random pairing secret P, the QR payload with the hub this device uses
// (§13.1), the user ID and an expiry 120 s from now, and a hub connection
// of the offer's own. It needs the hub: an unreachable one gives
// CodeOffline, and a device with none CodeNoHub.
func (d *Device) AddDevice(ctx context.Context) (*PairingOffer, error) {
	return d.addDevice(ctx, pairTTL)
}

func (d *Device) addDevice(ctx context.Context, ttl time.Duration) (*PairingOffer, error) {
	if _, err := d.engine(); err != nil {
		return nil, err
	}
	pl := pairPayload{hub: d.Hub(), uid: d.eng.UID(), exp: time.Now().Add(ttl)}
	if _, err := rand.Read(pl.p[:]); err != nil {
		return nil, newErr(CodeInternal, err, "no randomness for a pairing code")
	}
	payload, err := pl.encode()
	if err != nil {
		return nil, newErr(CodeInternal, err, "cannot write the pairing code")
	}
	s, err := openPairStore(ctx, d.opts, pl.hub)
	if err != nil {
		return nil, err
	}
	return &PairingOffer{
		id: suite.NewIdentity(d.us), ch: newPairChannel(s, pl.p, d.log), payload: payload, exp: pl.exp,
		reqs: map[[32]byte]*PairingRequest{},
	}, nil
}

// Payload is the text of the QR code to show. It holds the hub
// credential (§6.3): show it only on this screen, for Expires.
func (o *PairingOffer) Payload() string { return o.payload }

// Expires is when the QR code stops working (120 s after AddDevice).
func (o *PairingOffer) Expires() time.Time { return o.exp }

// Next waits for the next device asking to be added, answers it with a
// signed challenge (§6.3 step 2) and returns it, its code computed. Only
// the first three requests of an offer are answered; later ones are
// ignored. Next ends at the offer's expiry with CodeExpired (the §13.3
// message), after an approval with CodePairing, or when ctx ends.
func (o *PairingOffer) Next(ctx context.Context) (*PairingRequest, error) {
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
	var got *PairingRequest
	err := o.ch.wait(ctx, o.exp, func(msgs []pairMsg) (bool, error) {
		if err := o.take(ctx, msgs); err != nil {
			return false, err
		}
		var err error
		got, err = o.pop()
		return got != nil, err
	})
	switch {
	case errors.Is(err, errPairDeadline):
		return nil, newErr(CodeExpired, err, msgCodeExpired)
	case err != nil:
		if _, uerr := o.pop(); uerr != nil {
			return nil, uerr // closed or approved meanwhile
		}
		if ctx.Err() != nil {
			return nil, newErr(CodePairing, err, "pairing stopped")
		}
		return nil, err
	}
	return got, nil
}

// take answers the requests among msgs.
func (o *PairingOffer) take(ctx context.Context, msgs []pairMsg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.usable(); err != nil {
		return err
	}
	for _, m := range msgs {
		if m.kind == pairRequest {
			if err := o.answer(m); err != nil {
				return err
			}
		}
	}
	return o.flush(ctx)
}

// pop returns the first request Next has not returned yet, or the error
// that ends the offer.
func (o *PairingOffer) pop() (*PairingRequest, error) {
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
func (o *PairingOffer) usable() error {
	switch {
	case o.closed:
		return newErr(CodePairing, nil, "this pairing was closed: start again with Add a device")
	case o.approved != nil:
		return newErr(CodePairing, nil, "a device was already added with this code: start again to add another")
	case !time.Now().Before(o.exp):
		return newErr(CodeExpired, nil, msgCodeExpired)
	}
	return nil
}

// answer takes a request not seen before, if the offer has answers left
// (§6.3 step 2: at most three per QR code), and prepares its challenge.
// o.mu is held.
func (o *PairingOffer) answer(m pairMsg) error {
	if _, dup := o.reqs[m.ek]; dup {
		return nil // the same key asked again: it has its challenge
	}
	if len(o.reqs) >= maxPairChallenges {
		o.ch.log.Warn("tandem: pairing request beyond the third for this code; not answered", "name", m.name)
		return nil
	}
	r := &PairingRequest{o: o, name: m.name, ek: m.ek}
	if _, err := rand.Read(r.n[:]); err != nil {
		return newErr(CodeInternal, err, "no randomness for a pairing challenge")
	}
	r.code = suite.PairCode(o.ch.p.Secret, m.ek, r.n)
	o.reqs[m.ek] = r
	o.unposted = append(o.unposted, r)
	return nil
}

// flush posts the prepared challenges. One that fails stays prepared,
// with the same nonce, and is posted again at the next read, so a retry
// after a lost answer shows the same code. Only a refused credential is
// returned. o.mu is held.
func (o *PairingOffer) flush(ctx context.Context) error {
	for len(o.unposted) > 0 {
		r := o.unposted[0]
		c := pairMsg{kind: pairChallenge, ek: r.ek, n: r.n}
		copy(c.sig[:], ed25519.Sign(o.id.SignKey, suite.PairChallengeSigInput(o.ch.p.Secret, r.ek, r.n)))
		id, err := o.ch.post(ctx, c)
		switch {
		case err != nil && (CodeOf(err) == CodeAuth || CodeOf(err) == CodeInternal):
			return err
		case err != nil:
			o.ch.log.Info("tandem: posting a pairing challenge failed; trying again", "err", err)
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
func (r *PairingRequest) Name() string { return r.name }

// Code is the six-digit code both devices show (§6.3 step 3). Approve only
// if the new device shows the same.
func (r *PairingRequest) Code() string { return r.code }

// Approve hands the identity to the requesting device (§6.3 step 4): the
// user secret, HPKE-sealed to its one-time key, posted on the pairing
// channel. It ends the offer: one approval per QR code. It fails with
// CodeExpired after the offer's expiry and CodePairing for a declined
// request or an offer already used.
func (r *PairingRequest) Approve(ctx context.Context) error {
	o := r.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.usable(); err != nil {
		return err
	}
	if r.declined {
		return newErr(CodePairing, nil, "this request was declined")
	}
	sealed, err := suite.SealPairReply(o.id, r.ek)
	if err != nil {
		return newErr(CodePairing, err, "this device's pairing key is not usable: start again on the new device")
	}
	id, err := o.ch.post(ctx, pairMsg{kind: pairReply, ek: r.ek, sealed: sealed})
	if err != nil {
		return err
	}
	o.approved, o.reply = r, id
	if o.cancelNext != nil {
		o.cancelNext() // a Next waiting elsewhere ends: the offer is used
	}
	return nil
}

// Decline refuses the request: it can no longer be approved. Nothing is
// posted (§6.3 defines no refusal); the new device ends at the expiry.
func (r *PairingRequest) Decline() {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	r.declined = true
}

// Close ends the offer (a Next in progress returns CodePairing) and
// removes its messages from the hub: all of them if nothing was approved;
// after an approval all but the approved challenge and the reply, which
// the new device removes once it has read them. Close is safe to call more
// than once.
func (o *PairingOffer) Close(ctx context.Context) error {
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
	o.mu.Unlock()
	o.next.Lock() // the Next in progress has returned
	defer o.next.Unlock()
	o.ch.destroy(ctx, keep)
	return o.ch.store.Close()
}
