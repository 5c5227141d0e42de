package jmaphub

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// cursorVersion is the first field of every cursor this binding writes.
const cursorVersion = 1

// cursor is the binding's position (hub.Cursor), serialized as JSON:
//
//	{"v":1,"server":"<API URL>","account":"<accountId>",
//	 "mailbox":"<Tandem mailbox id>","state":"<Email state>",
//	 "known":["<Email id>",...]}
//
// known lists the ids reported as added and not yet as removed, sorted: the
// binding needs them to tell a message moved out of Tandem (an update) from
// one that never was in it, and to report only known ids as removed
// (§10.2 changes). A cursor for another server, account or mailbox is a
// full resync from nothing (hub.Changes.Reset): its known ids count for
// nothing here, since servers that derive ids from message bytes give the
// same message the same id in two accounts. A cursor without a server
// (written before it was recorded) counts as another server's. Decisions:
// docs/decisions/tandem-hub-jmap-changes.md,
// docs/decisions/tandem-hub-cursor-identity.md.
type cursor struct {
	V       int      `json:"v"`
	Server  string   `json:"server"`
	Account string   `json:"account"`
	Mailbox string   `json:"mailbox"`
	State   string   `json:"state"`
	Known   []string `json:"known"`
}

func decodeCursor(c hub.Cursor) (*cursor, error) {
	if c == nil {
		return &cursor{V: cursorVersion}, nil
	}
	var cur cursor
	if err := json.Unmarshal(c, &cur); err != nil {
		return nil, fmt.Errorf("%w: jmaphub: %v", hub.ErrBadCursor, err)
	}
	if cur.V != cursorVersion {
		return nil, fmt.Errorf("%w: jmaphub: cursor version %d", hub.ErrBadCursor, cur.V)
	}
	for _, id := range cur.Known {
		if id == "" {
			return nil, fmt.Errorf("%w: jmaphub: empty id in cursor", hub.ErrBadCursor)
		}
	}
	slices.Sort(cur.Known)
	cur.Known = slices.Compact(cur.Known)
	return &cur, nil
}

func (c *cursor) encode() hub.Cursor {
	slices.Sort(c.Known)
	c.Known = slices.Compact(c.Known)
	b, _ := json.Marshal(c) // strings and an int: Marshal cannot fail
	return b
}

// knownSet returns the cursor's known ids as a set.
func (c *cursor) knownSet() map[string]bool {
	m := make(map[string]bool, len(c.Known))
	for _, id := range c.Known {
		m[id] = true
	}
	return m
}
