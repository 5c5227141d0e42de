package client

import (
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Named records and fields of home (§6.2, §7.3) and of a collection.
const (
	membershipPrefix = "membership:"
	fieldName        = "_name" // a named record's name (§7.3)
	fieldKeys        = "keys"  // membership: the epoch keys the user holds
	fieldRole        = "role"  // membership: the cached role
	fieldState       = "state" // membership: requested, active, left, removed
	stateActive      = "active"
	// MetaNameField is the field of _meta that holds a collection's name
	// (§7.3, §8.1: the name is app metadata, not part of the roster).
	MetaNameField = "name"
)

var (
	rosterRecordID = roster.RosterRecordID()
	b32            = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
)

// keyEntry is one element of a membership's keys set (§6.2):
// { "epoch": b64u(ID of the statement that started the epoch), "k": b64u(epoch key) }.
type keyEntry struct {
	Epoch [32]byte `json:"epoch" tjson:"required"`
	K     [32]byte `json:"k" tjson:"required"`
}

func (e keyEntry) encode() ([]byte, error) {
	return json.Marshal(struct {
		Epoch tjson.Bytes `json:"epoch"`
		K     tjson.Bytes `json:"k"`
	}{tjson.Bytes(e.Epoch[:]), tjson.Bytes(e.K[:])})
}

// membershipName is the name of the home record for collection c:
// "membership:" || b32(collection ID) (docs/decisions/tandem-client-home.md).
func membershipName(c CollectionID) string { return membershipPrefix + suite.B32(c[:]) }

// parseMembershipName reads a collection ID back from a record name, in the
// one canonical spelling only.
func parseMembershipName(name string) (CollectionID, bool) {
	s, ok := strings.CutPrefix(name, membershipPrefix)
	if !ok {
		return CollectionID{}, false
	}
	b, err := b32.DecodeString(s)
	if err != nil || len(b) != 16 || suite.B32(b) != s {
		return CollectionID{}, false
	}
	return CollectionID(b), true
}

// membershipChanges are the home writes recording that the user owns
// collection c with the key of its epoch 0 (§6.2).
func membershipChanges(c CollectionID, epoch, key [32]byte) ([]record.Change, error) {
	name := membershipName(c)
	rec := suite.NamedRecordID(name)
	elem, err := keyEntry{Epoch: epoch, K: key}.encode()
	if err != nil {
		return nil, err
	}
	return []record.Change{
		{Record: rec, Field: fieldName, Op: suite.OpAssign, Value: []byte(name)},
		{Record: rec, Field: fieldKeys, Op: suite.OpAdd, Element: elem},
		{Record: rec, Field: fieldRole, Op: suite.OpAssign, Value: []byte(roster.RoleOwner)},
		{Record: rec, Field: fieldState, Op: suite.OpAssign, Value: []byte(stateActive)},
	}, nil
}

// validateHome checks a received home write (§6.2): signed with the user's
// own key (everyone who holds HK is one of the user's devices), valid under
// the home rules, and, for a membership key entry, readable. It returns the
// validated write.
func (d *Device) validateHome(sw *SignedWrite) (*record.Write, error) {
	if sw.Body.Author != d.id.UID {
		return nil, fmt.Errorf("%w: author is not this user (§6.2)", ErrNotHome)
	}
	w, err := d.home.Validator().Validate(&sw.Body, sw.Sig, 0)
	if err != nil {
		return nil, err
	}
	if w.Field() == fieldKeys && w.Op() != suite.OpAssign {
		var e keyEntry
		if err := tjson.Unmarshal(w.Element(), &e); err != nil {
			return nil, fmt.Errorf("%w: key entry: %w", ErrNotHome, err)
		}
	}
	return w, nil
}

// followMemberships follows every collection whose membership record in
// home is active, with every epoch key listed (§6.3 step 5: "opens home,
// and starts following every active membership"). It reports whether a new
// channel was added. d.mu is held.
func (d *Device) followMemberships() bool {
	added := false
	d.followInvites()
	for rec := range d.home.Records() {
		c, ok := d.membershipOf(rec)
		if ok && d.regString(d.home, rec, fieldState) == stateLeft {
			d.unfollow(c) // left on another device of the user (§11.5)
			continue
		}
		if !ok || !d.active(rec) {
			continue
		}
		coll := d.colls[c]
		if coll == nil {
			coll = newCollection(c, d.bounds.chainOptions())
			d.colls[c] = coll
		}
		for _, el := range d.home.Members(rec, fieldKeys) {
			var e keyEntry
			if tjson.Unmarshal(el, &e) != nil {
				continue // checked on arrival; cannot happen
			}
			if _, known := d.chans[suite.CollectionTag(e.K, e.Epoch)]; !known {
				added = true
			}
			d.follow(coll, e.Epoch, e.K) // also records the key of a channel already read (a draft, §11.6)
		}
	}
	return added
}

// membershipOf returns the collection a home record is the membership of.
func (d *Device) membershipOf(rec [16]byte) (CollectionID, bool) {
	for _, s := range d.home.Values(rec, fieldName) {
		if c, ok := parseMembershipName(string(s.Value)); ok {
			return c, true
		}
	}
	return CollectionID{}, false
}

// active reports whether a membership's state register holds "active"
// (one of its siblings, if in conflict: docs/decisions/tandem-client-home.md).
func (d *Device) active(rec [16]byte) bool {
	for _, s := range d.home.Values(rec, fieldState) {
		if string(s.Value) == stateActive {
			return true
		}
	}
	return false
}
