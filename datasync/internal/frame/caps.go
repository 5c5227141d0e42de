package frame

import (
	"errors"
	"fmt"
	"slices"
)

// Entries of data_versions, the capability a peer advertises in its key
// package (§Frames, capability negotiation).
const (
	// EntryDocuments gates vv, delta, snap and need_snap in the reference
	// encoding (frame version [V1]).
	EntryDocuments uint64 = 1
	// EntryGroup gates any frame in a group scope; every other member must
	// advertise it (§Group scope).
	EntryGroup uint64 = 2
	// EntryMedia gates need_blob, blob_gone and the media path
	// (§Attachments, §Documents too large for a frame).
	EntryMedia uint64 = 3
)

// ErrGated means a peer has not advertised an entry the frame needs; the
// frame must not be sent to it.
var ErrGated = errors.New("datasync/frame: peer has not advertised the entry this frame needs")

// Caps is the set of data_versions entries one peer advertised.
type Caps []uint64

// Has reports whether entry e was advertised.
func (c Caps) Has(e uint64) bool { return slices.Contains(c, e) }

// Required lists the entries a peer must have advertised before f may be
// sent to it. encoding is the entry that names the document encoding f.V
// stands for (EntryDocuments for V1; see docs/decisions/datasync-encoding.md
// for Ferry's own). group adds [EntryGroup].
func Required(f Frame, encoding uint64, group bool) []uint64 {
	req := []uint64{encoding}
	if f.Kind == KindNeedBlob || f.Kind == KindBlobGone {
		req = append(req, EntryMedia)
	}
	if group {
		req = append(req, EntryGroup)
	}
	return req
}

// Gate returns nil when a peer with caps may be sent f, and an error matching
// [ErrGated] naming the missing entry otherwise.
func Gate(caps Caps, f Frame, encoding uint64, group bool) error {
	for _, e := range Required(f, encoding, group) {
		if !caps.Has(e) {
			return fmt.Errorf("%w: entry %d for %s", ErrGated, e, f.Kind)
		}
	}
	return nil
}
