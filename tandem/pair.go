package tandem

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/pairing"
)

// The §13.3 messages of pairing.
const (
	msgCodeExpired = "This code has expired. Ask for a new one."
	msgOtherHub    = "This invite is for a different sync hub. Ferry can only use one hub at a time."
	// msgPairDeclined ends a join the showing device said no to
	// (docs/decisions/tandem-pairing-refusal.md).
	msgPairDeclined = "The other device said no, so this device was not added. To try again, start adding a device there for a new code."
)

// PairingOffer is "Add a device" on a device that has the identity (§6.3):
// a QR code valid for two minutes, and the pairing channel watched while
// it is shown. Each request that arrives is answered with a signed
// challenge, at most three per offer; approving one hands the identity to
// that request's device and ends the offer. A PairingOffer is safe for
// concurrent use; Close it when the QR code leaves the screen. The wire
// side is tandem/internal/pairing; the details the spec leaves open:
// docs/decisions/tandem-pairing.md.
type PairingOffer struct {
	o *pairing.Offer
}

// PairingRequest is a device asking to be added (§6.3 step 1), already
// answered with a challenge: the app shows "Add 'Name'? Code 483 920" and
// approves only if the new device shows the same code.
type PairingRequest struct {
	r *pairing.Request
}

// AddDevice starts pairing a new device (§6.3, §13.2 "Add a device"):
// a random pairing secret P, the QR payload with the hub this device uses
// (§13.1), the user ID and an expiry 120 s from now, and a hub connection
// of the offer's own. It needs the hub: an unreachable one gives
// CodeOffline, and a device with none CodeNoHub.
func (d *Device) AddDevice(ctx context.Context) (*PairingOffer, error) {
	return d.addDevice(ctx, pairing.TTL)
}

func (d *Device) addDevice(ctx context.Context, ttl time.Duration) (*PairingOffer, error) {
	if _, err := d.engine(); err != nil {
		return nil, err
	}
	h := d.Hub()
	s, err := openPairStore(ctx, d.opts, h)
	if err != nil {
		return nil, err
	}
	o, err := pairing.NewOffer(s, d.us, h.d, ttl, d.log)
	if err != nil {
		s.Close()
		return nil, offerErr(err)
	}
	return &PairingOffer{o}, nil
}

// Payload is the text of the QR code to show. It holds the hub
// credential (§6.3): show it only on this screen, for Expires.
func (o *PairingOffer) Payload() string { return o.o.Payload() }

// Expires is when the QR code stops working (120 s after AddDevice).
func (o *PairingOffer) Expires() time.Time { return o.o.Expires() }

// Next waits for the next device asking to be added, answers it with a
// signed challenge (§6.3 step 2) and returns it, its code computed. Only
// the first three requests of an offer are answered; later ones are
// ignored. Next ends at the offer's expiry with CodeExpired (the §13.3
// message), after an approval with CodePairing, or when ctx ends.
func (o *PairingOffer) Next(ctx context.Context) (*PairingRequest, error) {
	r, err := o.o.Next(ctx)
	if err != nil {
		return nil, offerErr(err)
	}
	return &PairingRequest{r}, nil
}

// Name is the name the new device gave (any text: whoever saw the QR code
// can post a request under any name, §6.3).
func (r *PairingRequest) Name() string { return r.r.Name() }

// Code is the six-digit code both devices show (§6.3 step 3). Approve only
// if the new device shows the same.
func (r *PairingRequest) Code() string { return r.r.Code() }

// Approve hands the identity to the requesting device (§6.3 step 4): the
// user secret, HPKE-sealed to its one-time key, posted on the pairing
// channel. It ends the offer: one approval per QR code. It fails with
// CodeExpired after the offer's expiry and CodePairing for a declined
// request or an offer already used.
func (r *PairingRequest) Approve(ctx context.Context) error {
	return offerErr(r.r.Approve(ctx))
}

// Decline refuses the request: it can no longer be approved, whatever
// Decline returns. The new device is told with a decline signed by the
// user's key, and its Device ends at once with CodePairing ("The other
// device said no", docs/decisions/tandem-pairing-refusal.md; §6.3 has no
// refusal). An error means it could not be told: it then ends at the
// expiry. Declining again posts nothing more; an approved request cannot
// be declined (CodePairing).
func (r *PairingRequest) Decline(ctx context.Context) error {
	return offerErr(r.r.Decline(ctx))
}

// Close ends the offer (a Next in progress returns CodePairing) and
// removes its messages from the hub: all of them if nothing was approved;
// after an approval all but the approved challenge and the reply, which
// the new device removes once it has read them. Close is safe to call more
// than once.
func (o *PairingOffer) Close(ctx context.Context) error { return o.o.Close(ctx) }

// PairingJoin is the new device's side of pairing (§6.3 steps 1, 3 and 5):
// the request posted with a one-time X25519 key, the code shown once the
// challenge's signature checks against the user ID in the QR code, and the
// identity installed when the showing device approves. A PairingJoin is
// safe for concurrent use; Close it if the pairing is abandoned.
type PairingJoin struct {
	j    *pairing.Join
	dir  string
	opts Options
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
	pl, err := pairing.ParsePayload(payload)
	if err != nil {
		return nil, payloadErr(err)
	}
	if !time.Now().Before(pl.Exp) {
		return nil, newErr(CodeExpired, nil, msgCodeExpired)
	}
	plHub := Hub{pl.Hub}
	switch {
	case !plHub.IsZero() && !opts.Hub.IsZero() && !opts.Hub.Same(plHub):
		return nil, newErr(CodeDifferentHub, nil, msgOtherHub)
	case opts.Hub.IsZero():
		opts.Hub = plHub
	}
	if !pairing.NameOK(opts.Name) {
		return nil, newErr(CodeInvalid, nil, "a device name must be under %d bytes, without control characters", pairing.MaxName)
	}
	if err := pairNoDevice(dir); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s, err := openPairStore(ctx, opts, opts.Hub)
	if err != nil {
		return nil, err
	}
	j, err := pairing.NewJoin(ctx, s, pl, opts.Name, opts.Logger)
	if err != nil {
		s.Close()
		return nil, joinErr(err)
	}
	return &PairingJoin{j: j, dir: dir, opts: opts}, nil
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

// Expires is when the QR code stops working.
func (j *PairingJoin) Expires() time.Time { return j.j.Payload().Exp }

// Code waits for the showing device's challenge to this request and
// returns the six-digit code to show (§6.3 step 3), only once the
// challenge's signature checks against the user ID in the QR code. A
// challenge to this request that does not check means someone put it in
// the real one's place: Code then shows nothing and fails with
// CodePairing. It fails with CodeExpired at the QR code's expiry.
func (j *PairingJoin) Code(ctx context.Context) (string, error) {
	code, err := j.j.Code(ctx)
	return code, joinErr(err)
}

// Device waits for the showing device's approval (§6.3 steps 4 and 5),
// after the code (it calls Code if the app has not), until shortly after
// the QR code's expiry. The reply must hold the secret of the user ID in
// the QR code; replies that don't are ignored. It then installs the
// identity in dir with a device ID of its own (§5.3), removes the pairing
// messages from the hub, and returns the open device: home and every
// active membership are found at its next Sync. No approval in time gives
// CodeExpired, and dir stays as it was. A decline from the showing device
// ends it at once with CodePairing ("The other device said no, …").
func (j *PairingJoin) Device(ctx context.Context) (*Device, error) {
	var d *Device
	err := j.j.Complete(ctx, func(secret [32]byte) error {
		var err error
		d, err = open(ctx, j.dir, j.opts, &secret)
		return err
	})
	if err != nil {
		return nil, joinErr(err)
	}
	return d, nil
}

// Close abandons the pairing (a Code or Device in progress returns
// CodePairing): the request is removed from the hub and the connection
// closed. After Device succeeded it does nothing.
func (j *PairingJoin) Close(ctx context.Context) error { return j.j.Close(ctx) }

// openPairStore opens a hub connection for a pairing session: the app's
// own binding when given, else the hub descriptor.
func openPairStore(ctx context.Context, opts Options, h Hub) (hub.Store, error) {
	var s hub.Store
	var err error
	switch {
	case opts.Store != nil:
		s, err = opts.Store(ctx)
	case h.IsZero():
		return nil, newErr(CodeNoHub, nil, "no sync hub is connected yet: connect one first")
	default:
		s, err = h.open(ctx, budgetOf(opts), opts.RootCAs)
	}
	if err != nil {
		return nil, pairHubErr(err)
	}
	if err := s.EnsureFolder(ctx); err != nil {
		s.Close()
		return nil, pairHubErr(err)
	}
	return s, nil
}

// offerErr and joinErr turn the pairing package's errors into *Error, on
// the showing and the new device's side.
func offerErr(err error) error {
	if errors.Is(err, pairing.ErrClosed) {
		return newErr(CodePairing, err, "this pairing was closed: start again with Add a device")
	}
	if errors.Is(err, pairing.ErrUsed) {
		return newErr(CodePairing, err, "a device was already added with this code: start again to add another")
	}
	return pairErr(err)
}

func joinErr(err error) error {
	if errors.Is(err, pairing.ErrDeclined) {
		return newErr(CodePairing, err, msgPairDeclined)
	}
	if errors.Is(err, pairing.ErrClosed) {
		return newErr(CodePairing, err, "this pairing was closed: scan a new code")
	}
	if errors.Is(err, pairing.ErrUsed) {
		return newErr(CodePairing, err, "this device was already added")
	}
	return pairErr(err)
}

// pairErr translates what both sides share; a hub error goes through
// pairHubErr.
func pairErr(err error) error {
	var e *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, pairing.ErrExpired):
		return newErr(CodeExpired, err, msgCodeExpired)
	case errors.Is(err, pairing.ErrDeclined):
		return newErr(CodePairing, err, "this request was declined")
	case errors.Is(err, pairing.ErrInterfered):
		return newErr(CodePairing, err, "someone interfered with this pairing, so no code can be trusted: start again on the other device")
	case errors.Is(err, pairing.ErrBadKey):
		return newErr(CodePairing, err, "this device's pairing key is not usable: start again on the new device")
	case errors.Is(err, pairing.ErrStopped):
		return newErr(CodePairing, err, "pairing stopped")
	case errors.Is(err, pairing.ErrLocal):
		return newErr(CodeInternal, err, "pairing failed on this device: start again")
	}
	return pairHubErr(err)
}

// payloadErr turns a refused QR payload into an *Error.
func payloadErr(err error) error {
	switch {
	case errors.Is(err, pairing.ErrNewerPayload):
		return newErr(CodeInvalid, err, "this code for adding a device needs a newer version of Ferry")
	case errors.Is(err, pairing.ErrPayloadHub):
		return newErr(CodeInvalid, err, "this code for adding a device names no usable sync hub")
	}
	return newErr(CodeInvalid, err, "this is not a code for adding a device")
}

// pairHubErr turns a hub error into an *Error, as Sync does.
func pairHubErr(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, hub.ErrAuth):
		return newErr(CodeAuth, err, msgAuth)
	case offline(err):
		return newErr(CodeOffline, err, msgOffline)
	}
	return newErr(CodeOffline, err, "the sync hub gave an answer Ferry can't use: try again")
}
