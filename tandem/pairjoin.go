package tandem

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// replySlack is how long after the QR code's expiry the new device still
// looks for a reply the showing device approved just before it
// (docs/decisions/tandem-pairing.md).
const replySlack = 5 * time.Second

// PairingJoin is the new device's side of pairing (§6.3 steps 1, 3 and 5):
// the request posted with a one-time X25519 key, the code shown once the
// challenge's signature checks against the user ID in the QR code, and the
// identity installed when the showing device approves. A PairingJoin is
// safe for concurrent use; Close it if the pairing is abandoned.
type PairingJoin struct {
	dir   string
	opts  Options
	pl    pairPayload
	ek    *ecdh.PrivateKey
	ch    *pairChannel
	slack time.Duration

	waiting sync.Mutex // serializes Code and Device
	mu      sync.Mutex // guards what follows
	code    string
	done    bool  // the device was installed
	failed  error // the pairing was interfered with: it cannot go on
	closed  bool
	cancel  context.CancelFunc // ends a wait in progress (Close)

	// got holds the channel's messages for this device's key read so
	// far: Code's read may already bring the reply Device waits for.
	got []pairMsg
}

// keep adds the messages for this device's key to those read before and
// returns them all (bounded by the bytes the channel reads, maxPairBytes).
func (j *PairingJoin) keep(fresh []pairMsg) []pairMsg {
	me := j.pub()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range fresh {
		if m.ek == me && m.kind != pairRequest {
			j.got = append(j.got, m)
		}
	}
	return j.got
}

// JoinDevice starts adding this installation to the user who shows the
// pairing QR code payload (§6.3 step 1): it reads the payload strictly,
// refuses an expired one (CodeExpired, the §13.3 message) and one for
// another hub than opts.Hub (CodeDifferentHub), makes a one-time key pair
// and posts the request under opts.Name on the payload's hub. The identity
// is installed in dir, which must not hold a device yet (CodeExists), by
// Device. Nothing is written to dir before then. opts.Store, when set,
// reaches the hub instead of the payload's descriptor; opts.Hub, when zero,
// becomes the payload's hub.
func JoinDevice(ctx context.Context, dir, payload string, opts Options) (*PairingJoin, error) {
	pl, err := parsePairPayload(payload)
	if err != nil {
		return nil, err
	}
	if !time.Now().Before(pl.exp) {
		return nil, newErr(CodeExpired, nil, msgCodeExpired)
	}
	switch {
	case !pl.hub.IsZero() && !opts.Hub.IsZero() && !opts.Hub.Same(pl.hub):
		return nil, newErr(CodeDifferentHub, nil, msgOtherHub)
	case opts.Hub.IsZero():
		opts.Hub = pl.hub
	}
	if !pairNameOK(opts.Name) {
		return nil, newErr(CodeInvalid, nil, "a device name must be under %d bytes, without control characters", maxPairName)
	}
	if err := pairNoDevice(dir); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ek, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, newErr(CodeInternal, err, "no randomness for a pairing key")
	}
	s, err := openPairStore(ctx, opts, opts.Hub)
	if err != nil {
		return nil, err
	}
	j := &PairingJoin{dir: dir, opts: opts, pl: pl, ek: ek, ch: newPairChannel(s, pl.p, opts.Logger), slack: replySlack}
	if _, err := j.ch.post(ctx, pairMsg{kind: pairRequest, name: opts.Name, ek: j.pub()}); err != nil {
		s.Close()
		return nil, err
	}
	return j, nil
}

// pairNoDevice checks that dir could receive a new device: its parent exists
// and it holds no identity yet.
func pairNoDevice(dir string) error {
	if err := parentExists(dir); err != nil {
		return err
	}
	_, err := os.Stat(filepath.Join(dir, secretFile))
	switch {
	case err == nil:
		return newErr(CodeExists, nil, "%s already holds a device: use an empty directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return newErr(CodeStorage, err, "cannot read %s", dir)
	}
	return nil
}

func (j *PairingJoin) pub() [32]byte { return [32]byte(j.ek.PublicKey().Bytes()) }

// Expires is when the QR code stops working.
func (j *PairingJoin) Expires() time.Time { return j.pl.exp }

// Code waits for the showing device's challenge to this request and
// returns the six-digit code to show (§6.3 step 3), only once the
// challenge's signature checks against the user ID in the QR code. A
// challenge to this request that does not check means someone put it in
// the real one's place: Code then shows nothing and fails with
// CodePairing. It fails with CodeExpired at the QR code's expiry.
func (j *PairingJoin) Code(ctx context.Context) (string, error) {
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
func (j *PairingJoin) begin(ctx context.Context) (context.Context, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return nil, err
	}
	ctx, j.cancel = context.WithCancel(ctx)
	return ctx, nil
}

func (j *PairingJoin) end() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancel()
	j.cancel = nil
}

// waitCode waits for the challenge; j.waiting is held.
func (j *PairingJoin) waitCode(ctx context.Context) (string, error) {
	j.mu.Lock()
	code := j.code
	j.mu.Unlock()
	if code != "" {
		return code, nil
	}
	me := j.pub()
	err := j.ch.wait(ctx, j.pl.exp, func(fresh []pairMsg) (bool, error) {
		msgs := j.keep(fresh)
		forged := false
		for _, m := range msgs {
			if m.kind != pairChallenge || m.ek != me {
				continue
			}
			if suite.VerifyStrict(j.pl.uid[:], suite.PairChallengeSigInput(j.pl.p, me, m.n), m.sig[:]) {
				code = suite.PairCode(j.pl.p, me, m.n)
				return true, nil
			}
			forged = true
		}
		if forged {
			j.ch.log.Warn("tandem: pairing challenge with a bad signature; no code shown")
			err := newErr(CodePairing, nil, "someone interfered with this pairing, so no code can be trusted: start again on the other device")
			j.mu.Lock()
			j.failed = err
			j.mu.Unlock()
			return false, err
		}
		return false, nil
	})
	if err := j.waitErr(ctx, err); err != nil {
		return "", err
	}
	j.mu.Lock()
	j.code = code
	j.mu.Unlock()
	return code, nil
}

// waitErr turns the end of a wait into the error to return.
func (j *PairingJoin) waitErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errPairDeadline):
		return newErr(CodeExpired, err, msgCodeExpired)
	case ctx.Err() != nil:
		j.mu.Lock()
		defer j.mu.Unlock()
		if uerr := j.usable(); uerr != nil {
			return uerr
		}
		return newErr(CodePairing, err, "pairing stopped")
	}
	return err
}

// usable reports why the pairing is over, if it is. j.mu is held.
func (j *PairingJoin) usable() error {
	switch {
	case j.closed:
		return newErr(CodePairing, nil, "this pairing was closed: scan a new code")
	case j.done:
		return newErr(CodePairing, nil, "this device was already added")
	case j.failed != nil:
		return j.failed
	}
	return nil
}

// Device waits for the showing device's approval (§6.3 steps 4 and 5),
// after the code (it calls Code if the app has not), until shortly after
// the QR code's expiry. The reply must hold the secret of the user ID in
// the QR code; replies that don't are ignored. It then installs the
// identity in dir with a device ID of its own (§5.3), removes the pairing
// messages from the hub, and returns the open device: home and every
// active membership are found at its next Sync. No approval in time gives
// CodeExpired, and dir stays as it was.
func (j *PairingJoin) Device(ctx context.Context) (*Device, error) {
	j.waiting.Lock()
	defer j.waiting.Unlock()
	ctx, err := j.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer j.end()
	if _, err := j.waitCode(ctx); err != nil {
		return nil, err
	}
	me := j.pub()
	var secret [32]byte
	checked := 0 // replies before it were opened already
	err = j.ch.wait(ctx, j.pl.exp.Add(j.slack), func(fresh []pairMsg) (bool, error) {
		msgs := j.keep(fresh)
		msgs, checked = msgs[checked:], len(msgs)
		for _, m := range msgs {
			if m.kind != pairReply || m.ek != me {
				continue
			}
			id, err := suite.OpenPairReply(j.ek, j.pl.uid, m.sealed)
			if err != nil {
				j.ch.log.Warn("tandem: pairing reply that does not open to this user; ignored", "err", err)
				continue
			}
			secret = id.Secret
			return true, nil
		}
		return false, nil
	})
	if err := j.waitErr(ctx, err); err != nil {
		return nil, err
	}
	d, err := open(ctx, j.dir, j.opts, &secret)
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	j.done = true
	j.mu.Unlock()
	j.ch.destroy(ctx, nil)
	j.ch.store.Close()
	return d, nil
}

// Close abandons the pairing (a Code or Device in progress returns
// CodePairing): the request is removed from the hub and the connection
// closed. After Device succeeded it does nothing.
func (j *PairingJoin) Close(ctx context.Context) error {
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
