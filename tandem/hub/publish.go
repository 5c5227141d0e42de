package hub

import (
	"context"
	"fmt"
	"sync"
)

// Publisher appends envelopes to a Store without ever appending one the hub
// already holds (§10.2, last paragraph; docs/decisions/tandem-hub-identity.md). A message's identity is
// H(envelope) (§10.4), not the id an append answers: that answer may be lost
// while the append landed, or a push may show the message first.
//
// Before each append the Publisher brings its own view of the folder up to
// date (Changes from its private cursor) and fetches the new messages of the
// envelope's channel, so it finds an envelope appended earlier by this
// device (even by an earlier process, or an append whose answer was lost) or
// by any other. A Publisher is safe for concurrent use; publishes are
// serialized.
type Publisher struct {
	store Store

	mu      sync.Mutex
	cursor  Cursor
	byHash  map[[32]byte]ID
	hashOf  map[ID][32]byte
	pending map[string][]ID // added, not yet fetched, by channel
	// own holds this Publisher's appends since its cursor. The next
	// Changes from that cursor lists each of them as added if it is still
	// in the folder; one it doesn't list was destroyed meanwhile.
	own map[ID][32]byte
}

// NewPublisher returns a Publisher appending to s.
func NewPublisher(s Store) *Publisher {
	return &Publisher{
		store:   s,
		byHash:  map[[32]byte]ID{},
		hashOf:  map[ID][32]byte{},
		pending: map[string][]ID{},
		own:     map[ID][32]byte{},
	}
}

// Publish returns the id of a message holding envelope on channel: the id
// of one already in the folder, or of a new one it appends. An error leaves
// the outcome of an append unknown; publishing the same envelope again is
// always safe.
func (p *Publisher) Publish(ctx context.Context, channel string, envelope []byte) (ID, error) {
	if !ValidChannel(channel) {
		return "", fmt.Errorf("%w: %q", ErrBadChannel, channel)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := Hash(envelope)
	if err := p.refresh(ctx, channel); err != nil {
		return "", fmt.Errorf("hub: publish: looking for the envelope: %w", err)
	}
	if id, ok := p.byHash[h]; ok {
		return id, nil
	}
	id, err := p.store.Append(ctx, channel, envelope)
	if err != nil {
		return "", err
	}
	p.byHash[h] = id
	p.hashOf[id] = h
	p.own[id] = h
	return id, nil
}

// refresh applies the folder's changes and hashes the bodies of channel's
// messages it has not seen yet. On error no state changes.
func (p *Publisher) refresh(ctx context.Context, channel string) error {
	ch, err := p.store.Changes(ctx, p.cursor)
	if err != nil {
		return err
	}
	listed := map[ID]bool{}
	for _, a := range ch.Added {
		listed[a.ID] = true
		if _, mine := p.own[a.ID]; !mine {
			p.pending[a.Channel] = append(p.pending[a.Channel], a.ID)
		}
	}
	for id := range p.own {
		if !listed[id] {
			p.forget(id)
		}
	}
	clear(p.own)
	for _, id := range ch.Removed {
		p.forget(id)
	}
	p.cursor = ch.Cursor
	ids := p.pending[channel]
	if len(ids) == 0 {
		return nil
	}
	bodies, err := p.store.Fetch(ctx, ids)
	if err != nil {
		return err // pending stays: fetched again next time
	}
	delete(p.pending, channel)
	removed := map[ID]bool{}
	for _, id := range ch.Removed {
		removed[id] = true
	}
	for _, b := range bodies {
		if b.Err != nil || removed[b.ID] {
			continue
		}
		h := Hash(b.Envelope)
		p.hashOf[b.ID] = h
		if _, ok := p.byHash[h]; !ok {
			p.byHash[h] = b.ID
		}
	}
	return nil
}

// forget drops a message that left the folder.
func (p *Publisher) forget(id ID) {
	h, ok := p.hashOf[id]
	if !ok {
		return
	}
	delete(p.hashOf, id)
	if p.byHash[h] != id {
		return
	}
	delete(p.byHash, h)
	for other, oh := range p.hashOf { // a duplicate still holds it
		if oh == h {
			p.byHash[h] = other
			return
		}
	}
}
