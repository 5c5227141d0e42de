package roster

import (
	"encoding/json"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Fragment is one indexed part of an epoch's inventory bytes (§8.3,
// §10.5). A fragment is not an authorized inventory by itself: only an
// assembly whose hash matches the epoch statement's snapshot is.
type Fragment struct {
	Epoch [32]byte // the epoch-start statement ID
	Part  int      // index, from zero
	Parts int      // number of parts; every part of one assembly agrees
	Bytes []byte   // this part of the canonical inventory bytes
}

// Message size limits of §10.6.
const (
	// MessageLimit is the size a message SHOULD stay under (64 KiB).
	MessageLimit = 64 << 10
	// MessageHardLimit is the size a message MUST stay under (1 MiB).
	MessageHardLimit = 1 << 20
	// HeaderAllowance is the room Split leaves for the RFC 5322 header of
	// §10.4 (the fixed fields, a 32-character channel tag, a Date and a
	// Message-ID come to well under 400 bytes).
	HeaderAllowance = 1024
	// envelopeOverhead is magic (4) + version (1) + kind (1) + salt (32) +
	// the AEAD tag (16) of §5.4.
	envelopeOverhead = 4 + 1 + 1 + 32 + 16
)

// wire form of a kind-1 inventory fragment payload (§10.5):
//
//	{ "inventory": { "epoch": "<b64u epoch-start id>", "part": 0,
//	                 "parts": 1, "bytes": "<b64u fragment>" } }
type wireFragmentPayload struct {
	Inventory *wireFragment `json:"inventory"`
	// The record-state form's members: present means the payload mixes
	// the two forms, which §10.5 forbids.
	Rec    *tjson.Value `json:"rec,omitempty"`
	Writes *tjson.Value `json:"writes,omitempty"`
}

type wireFragment struct {
	Epoch *string `json:"epoch"`
	Part  *uint64 `json:"part"`
	Parts *uint64 `json:"parts"`
	Bytes *string `json:"bytes"`
}

// DecodeFragment reads a kind-1 inventory fragment payload (§10.5) with the
// strict reader. It rejects a payload that also carries "rec" or "writes"
// (exactly one payload form), a missing member, an epoch that is not 32
// bytes, parts of zero or above maxParts (0 means DefaultMaxParts), part not
// below parts, and empty bytes. Errors wrap ErrRejected and ErrFragment; it
// never panics.
func DecodeFragment(payload []byte, maxParts int) (*Fragment, error) {
	if maxParts <= 0 {
		maxParts = DefaultMaxParts
	}
	var w wireFragmentPayload
	if err := tjson.Unmarshal(payload, &w); err != nil {
		return nil, fragErr("%v", err)
	}
	if w.Rec != nil || w.Writes != nil {
		return nil, fragErr("payload carries both inventory and record forms")
	}
	f := w.Inventory
	if f == nil || f.Epoch == nil || f.Part == nil || f.Parts == nil || f.Bytes == nil {
		return nil, fragErr("missing inventory, epoch, part, parts or bytes")
	}
	epoch, err := decodeFixed(*f.Epoch, 32, "epoch")
	if err != nil {
		return nil, fragErr("%v", err)
	}
	if *f.Parts == 0 || *f.Parts > uint64(maxParts) || *f.Part >= *f.Parts {
		return nil, fragErr("part %d of %d", *f.Part, *f.Parts)
	}
	b, err := decodeB64u(*f.Bytes)
	if err != nil || len(b) == 0 {
		return nil, fragErr("bytes empty or not b64u")
	}
	return &Fragment{Epoch: [32]byte(epoch), Part: int(*f.Part), Parts: int(*f.Parts), Bytes: b}, nil
}

func fragErr(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrRejected, ErrFragment, fmt.Sprintf(format, args...))
}

// Encode returns f's payload JSON (§10.5).
func (f *Fragment) Encode() ([]byte, error) {
	part, parts := uint64(f.Part), uint64(f.Parts)
	epoch, b := encB64u(f.Epoch[:]), encB64u(f.Bytes)
	return json.Marshal(wireFragmentPayload{Inventory: &wireFragment{Epoch: &epoch, Part: &part, Parts: &parts, Bytes: &b}})
}

// MessageSize is the size of the hub message (§10.4) carrying a kind-1
// envelope (§5.4) whose plaintext is n bytes: the header allowance plus the
// envelope in base64, wrapped at 76 characters with CRLF line ends.
func MessageSize(n int) int {
	env := envelopeOverhead + n
	b64 := (env + 2) / 3 * 4
	lines := (b64 + 75) / 76
	return HeaderAllowance + b64 + 2*lines
}

// maxFragmentBytes is the largest fragment whose payload, with any part and
// parts numbers, keeps the message within limit.
func maxFragmentBytes(limit int) int {
	// The payload around the bytes, with 20-digit part and parts numbers.
	const big = uint64(1<<64 - 1)
	e := ""
	skeleton, _ := json.Marshal(wireFragmentPayload{Inventory: &wireFragment{Epoch: &e, Part: new(uint64), Parts: new(uint64), Bytes: &e}})
	overhead := len(skeleton) + 43 + 2*(len(fmt.Sprint(big))-1)
	lo, hi := 0, limit
	for lo < hi { // largest n with MessageSize(overhead + b64u(n)) <= limit
		mid := (lo + hi + 1) / 2
		if MessageSize(overhead+(mid*8+5)/6) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Split cuts inventory bytes for epoch into indexed fragments whose
// messages each stay within limit bytes (§10.6). limit 0 means
// MessageLimit; a limit above MessageHardLimit, or too small to carry one
// byte, fails with ErrMessageLimit.
func Split(epoch [32]byte, inventory []byte, limit int) ([]*Fragment, error) {
	if limit == 0 {
		limit = MessageLimit
	}
	if limit > MessageHardLimit {
		return nil, fmt.Errorf("%w: %d", ErrMessageLimit, limit)
	}
	size := maxFragmentBytes(limit)
	if size < 1 || len(inventory) == 0 {
		return nil, fmt.Errorf("%w: %d bytes per fragment for %d inventory bytes", ErrMessageLimit, size, len(inventory))
	}
	parts := (len(inventory) + size - 1) / size
	out := make([]*Fragment, 0, parts)
	for i := 0; i < parts; i++ {
		end := min((i+1)*size, len(inventory))
		out = append(out, &Fragment{Epoch: epoch, Part: i, Parts: parts, Bytes: append([]byte(nil), inventory[i*size:end]...)})
	}
	return out, nil
}
