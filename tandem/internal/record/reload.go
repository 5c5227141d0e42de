package record

import (
	"fmt"
)

// Stored write bytes: how the durable device (package tandem) keeps one
// kept write in its own database. The layout is the state layout's write
// (encode.go) preceded by the record ID:
//
//	stored = recordID (16) || write
//
// The write ID is stored beside these bytes, not in them.

// AppendStored appends w's stored bytes to b.
func AppendStored(b []byte, w *Write) []byte {
	b = append(b, w.body.Record[:]...)
	return appendWrite(b, w)
}

// Reload rebuilds a write from stored bytes that this device wrote into its
// own database after the write had passed Validate (or was built here), and
// its write ID as stored beside them. It checks the write's shape and scope
// but not its signature: the database lives next to the user secret, under
// the same protection, so whoever could alter it could also sign anything
// (see the package doc of tandem, "What protects the state"). Bytes that do
// not decode, or a write of another scope, give ErrEncoding.
func (v *Validator) Reload(b []byte, id [32]byte) (*Write, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: stored write too short", ErrEncoding)
	}
	d := decoder{b: b[16:]}
	body, sig, epoch := d.write(v.rules.Scope, [16]byte(b[:16]))
	if d.err != nil || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: stored write", ErrEncoding)
	}
	if err := v.checkShape(&body); err != nil {
		return nil, fmt.Errorf("%w: stored write: %w", ErrEncoding, err)
	}
	return &Write{body: body, id: id, sig: sig, epoch: epoch, ok: true}, nil
}
