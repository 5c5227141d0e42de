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
	bodyErr     error  // hub.CheckBodyHeader's verdict
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
		bodyErr:     hub.CheckBodyHeader(h),
		contentType: h.Get("Content-Type"),
		encoding:    h.Get("Content-Transfer-Encoding"),
	}
}

// headerMemo parses each distinct header block once. A folder's messages
// carry few distinct blocks (one per channel), so a sync of thousands of
// messages parses a handful and shares their strings. The result is a
// function of the bytes alone, so the memo changes no result; it is
// bounded so that a server sending many or large distinct blocks costs
// only the parsing it would cost anyway.
type headerMemo struct {
	index map[string]int32 // block → infos index
	infos []headerInfo
}

const (
	memoEntries  = 256
	memoBlockMax = 1 << 10
)

// get returns the block's fields, and their index in m (-1 if m is full).
func (m *headerMemo) get(block []byte) (headerInfo, int32) {
	if len(block) > memoBlockMax {
		return parseHeaderInfo(block), -1
	}
	if i, ok := m.index[string(block)]; ok {
		return m.infos[i], i
	}
	hi := parseHeaderInfo(block)
	if len(m.infos) >= memoEntries {
		return hi, -1
	}
	if m.index == nil {
		m.index = map[string]int32{}
	}
	i := int32(len(m.infos))
	m.index[string(block)] = i
	m.infos = append(m.infos, hi)
	return hi, i
}

// headerCache keeps, for the messages Changes has reported, the header
// fields Fetch needs (§10.4): Changes asks for them along with
// Tandem-Channel, so that Fetch asks for BODY[TEXT] alone and the server
// does not read the headers a second time. A message never changes under
// its UIDVALIDITY and UID (RFC 9051 §2.3.1.1), so a header read once stays
// true; a message not in the cache is fetched with its header fields as
// §10.3 gives. The cache holds at most cacheUIDs messages and is emptied
// when UIDVALIDITY changes. See docs/decisions/tandem-hub-imap-header-cache.md.
type headerCache struct {
	uidValidity uint32
	memo        headerMemo
	byUID       map[uint32]int32 // → memo.infos index
}

const cacheUIDs = 1 << 18

// changesFields are the header fields Changes asks for: Tandem-Channel
// (§10.3) and what Fetch needs for the three reading steps (§10.4).
const changesFields = hub.HeaderChannel + " " + hub.HeaderVersion + " Content-Type Content-Transfer-Encoding"

// reset empties the cache unless it is for uidValidity.
func (hc *headerCache) reset(uidValidity uint32) {
	if hc.uidValidity != uidValidity || hc.byUID == nil {
		*hc = headerCache{uidValidity: uidValidity, byUID: map[uint32]int32{}}
	}
}

// add records uid's header block and returns its fields.
func (hc *headerCache) add(uid uint32, block []byte) headerInfo {
	hi, i := hc.memo.get(block)
	if i >= 0 && len(hc.byUID) < cacheUIDs {
		hc.byUID[uid] = i
	}
	return hi
}

// lookup returns uid's header fields, if they are cached.
func (hc *headerCache) lookup(uidValidity, uid uint32) (headerInfo, bool) {
	if hc.uidValidity != uidValidity {
		return headerInfo{}, false
	}
	i, ok := hc.byUID[uid]
	if !ok {
		return headerInfo{}, false
	}
	return hc.memo.infos[i], true
}

// forget drops uids (destroyed or reported removed).
func (hc *headerCache) forget(uidValidity uint32, uids []uint32) {
	if hc.uidValidity == uidValidity {
		for _, uid := range uids {
			delete(hc.byUID, uid)
		}
	}
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
	if hi.bodyErr != nil {
		b.Err = hi.bodyErr
		return b
	}
	b.Envelope, b.Err = hub.DecodeBody(hi.contentType, hi.encoding, f.text)
	return b
}
