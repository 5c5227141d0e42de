package imaphub

import (
	"fmt"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// headerInfo is what this package reads from a message's header block
// (§10.4), parsed by hub.ParseHeader.
type headerInfo struct {
	parseErr    error  // the block is not a header (not an envelope)
	channel     string // Tandem-Channel, unfolded and trimmed; "" if absent
	versionErr  error  // hub.CheckVersion's verdict
	contentType string
	encoding    string // Content-Transfer-Encoding
}

func parseHeaderInfo(block []byte) headerInfo {
	h, err := hub.ParseHeader(block)
	if err != nil {
		return headerInfo{parseErr: err}
	}
	return headerInfo{
		channel:     h.Get(hub.HeaderChannel),
		versionErr:  hub.CheckVersion(h),
		contentType: h.Get("Content-Type"),
		encoding:    h.Get("Content-Transfer-Encoding"),
	}
}

// headerMemo parses each distinct header block of one command's answer
// once. A folder's messages carry few distinct blocks (one per channel),
// so a sync of thousands of messages parses a handful and shares their
// strings. The result is a function of the bytes alone, so the memo
// changes no result; it is bounded so that a server sending many or large
// distinct blocks costs only the parsing it would cost anyway.
type headerMemo map[string]headerInfo

const (
	memoEntries  = 256
	memoBlockMax = 1 << 10
)

func (m headerMemo) get(block []byte) headerInfo {
	if len(block) > memoBlockMax {
		return parseHeaderInfo(block)
	}
	if hi, ok := m[string(block)]; ok {
		return hi
	}
	hi := parseHeaderInfo(block)
	if len(m) < memoEntries {
		m[string(block)] = hi
	}
	return hi
}

// decode applies §10.4 to one fetched message whose header block is hi.
func decode(f fetched, hi headerInfo) hub.Body {
	var b hub.Body
	if f.tooLarge || len(f.text) >= hub.MaxMessage*4 {
		b.Err = fmt.Errorf("imaphub: UID %d: %w", f.uid, hub.ErrTooLarge)
		return b
	}
	if hi.parseErr != nil {
		b.Err = hi.parseErr
		return b
	}
	b.Channel = hi.channel
	if hi.versionErr != nil {
		b.Err = hi.versionErr
		return b
	}
	if b.Channel == "" {
		b.Err = fmt.Errorf("%w: no %s header", hub.ErrNotEnvelope, hub.HeaderChannel)
		return b
	}
	b.Envelope, b.Err = hub.DecodeBody(hi.contentType, hi.encoding, f.text)
	return b
}
