package roster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Role is a member's role (§8.1). Only the three constants below are valid
// in a statement (§8.2); any other string read from a statement is kept so
// that validation can name the rule it breaks.
type Role string

// The three roles of §8.1.
const (
	RoleOwner  Role = "owner"
	RoleWriter Role = "writer"
	RoleReader Role = "reader"
)

// Valid reports whether r is one of the three defined roles.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleWriter || r == RoleReader }

// canWrite reports whether r may write data records (§8.3).
func (r Role) canWrite() bool { return r == RoleOwner || r == RoleWriter }

// Key is the "key" object of a statement (§8.1): the epoch counter, the
// commitment of the epoch key (§5.7) and the previous epoch's commitment.
// Prev is nil in epoch 0 (docs/decisions/tandem-roster-statement-json.md).
type Key struct {
	N      uint64
	Commit [32]byte
	Prev   *[32]byte
}

// Member is one entry of "members" (§8.1). UID is the member's signing key,
// UKA the agreement key grants are sealed to, Name what the member called
// themselves, Via the invite that admitted them (nil if none).
type Member struct {
	UID  [32]byte
	Role Role
	UKA  [32]byte
	Name string
	Via  *[16]byte
}

// State is the complete roster state a statement carries (§8.1):
//
//	{ "n": 12,
//	  "key": { "n": 3, "commit": "<b64u>", "prev": "<b64u>" },
//	  "snapshot": "<b64u>",
//	  "members": [ { "uid", "role", "uka", "name", "via" } ],
//	  "deleted": false,
//	  "nonce": "<b64u 16 bytes, genesis only>" }
//
// Byte strings are b64u. Snapshot is nil while no epoch has started since
// the genesis; Nonce carries the genesis's 16 random bytes (§7.1). See
// docs/decisions/tandem-roster-statement-json.md for the fields the draft
// leaves open.
type State struct {
	N        uint64
	Key      Key
	Snapshot *[32]byte
	Members  []Member
	Deleted  bool
	Nonce    *[16]byte
}

// Member returns the entry for uid, or false if uid is not listed.
func (s *State) Member(uid [32]byte) (Member, bool) {
	for _, m := range s.Members {
		if m.UID == uid {
			return m, true
		}
	}
	return Member{}, false
}

// wire forms, read with the strict reader (tandem/tjson). Pointers tell an
// absent member from a present one.
type wireState struct {
	N        *uint64        `json:"n"`
	Key      *wireKey       `json:"key"`
	Snapshot *string        `json:"snapshot,omitempty"`
	Members  *[]*wireMember `json:"members"`
	Deleted  *bool          `json:"deleted"`
	Nonce    *string        `json:"nonce,omitempty"`
}

type wireKey struct {
	N      *uint64 `json:"n"`
	Commit *string `json:"commit"`
	Prev   *string `json:"prev,omitempty"`
}

type wireMember struct {
	UID  *string `json:"uid"`
	Role *string `json:"role"`
	UKA  *string `json:"uka"`
	Name *string `json:"name"`
	Via  *string `json:"via,omitempty"`
}

// ParseState reads a statement's value bytes as the JSON state of §8.1,
// through the strict reader of §10.5 (tandem/tjson): duplicate names,
// invalid UTF-8, trailing bytes, non-integers and wrong types reject the
// whole value. Unknown members are ignored. Required: n, key (n, commit),
// members (each uid, role, uka, name). Optional: snapshot, deleted (absent
// means false), key.prev, via, nonce. It never panics; errors wrap ErrState.
func ParseState(value []byte) (*State, error) {
	var w wireState
	if err := tjson.Unmarshal(value, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	s, err := w.state()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	return s, nil
}

func (w *wireState) state() (*State, error) {
	if w.N == nil || w.Key == nil || w.Members == nil {
		return nil, fmt.Errorf("missing n, key or members")
	}
	s := &State{N: *w.N}
	if w.Key.N == nil || w.Key.Commit == nil {
		return nil, fmt.Errorf("missing key.n or key.commit")
	}
	s.Key.N = *w.Key.N
	if err := fixed32(*w.Key.Commit, "key.commit", &s.Key.Commit); err != nil {
		return nil, err
	}
	if w.Key.Prev != nil {
		s.Key.Prev = new([32]byte)
		if err := fixed32(*w.Key.Prev, "key.prev", s.Key.Prev); err != nil {
			return nil, err
		}
	}
	if w.Snapshot != nil {
		s.Snapshot = new([32]byte)
		if err := fixed32(*w.Snapshot, "snapshot", s.Snapshot); err != nil {
			return nil, err
		}
	}
	if w.Deleted != nil {
		s.Deleted = *w.Deleted
	}
	if w.Nonce != nil {
		b, err := decodeFixed(*w.Nonce, 16, "nonce")
		if err != nil {
			return nil, err
		}
		s.Nonce = (*[16]byte)(b)
	}
	for i, wm := range *w.Members {
		m, err := wm.member()
		if err != nil {
			return nil, fmt.Errorf("members[%d]: %w", i, err)
		}
		s.Members = append(s.Members, m)
	}
	return s, nil
}

func (wm *wireMember) member() (Member, error) {
	var m Member
	if wm == nil || wm.UID == nil || wm.Role == nil || wm.UKA == nil || wm.Name == nil {
		return m, fmt.Errorf("missing uid, role, uka or name")
	}
	if err := fixed32(*wm.UID, "uid", &m.UID); err != nil {
		return m, err
	}
	if err := fixed32(*wm.UKA, "uka", &m.UKA); err != nil {
		return m, err
	}
	m.Role = Role(*wm.Role)
	m.Name = *wm.Name
	if wm.Via != nil {
		b, err := decodeFixed(*wm.Via, 16, "via")
		if err != nil {
			return m, err
		}
		m.Via = (*[16]byte)(b)
	}
	return m, nil
}

func fixed32(s, what string, out *[32]byte) error {
	b, err := decodeFixed(s, 32, what)
	if err != nil {
		return err
	}
	*out = [32]byte(b)
	return nil
}

// Marshal serializes s as the JSON of §8.1 with encoding/json (a real
// serializer, §10.5). It is used only to make new statements; a received
// statement's value bytes are never re-serialized (§9.4). Names must be
// valid UTF-8, since a serializer would otherwise replace bytes and the
// stored name would differ from the member's own (§8.1).
func (s *State) Marshal() ([]byte, error) {
	w := wireState{N: &s.N, Key: &wireKey{N: &s.Key.N}, Deleted: &s.Deleted}
	commit := encB64u(s.Key.Commit[:])
	w.Key.Commit = &commit
	if s.Key.Prev != nil {
		p := encB64u(s.Key.Prev[:])
		w.Key.Prev = &p
	}
	if s.Snapshot != nil {
		p := encB64u(s.Snapshot[:])
		w.Snapshot = &p
	}
	if s.Nonce != nil {
		p := encB64u(s.Nonce[:])
		w.Nonce = &p
	}
	ms := make([]*wireMember, 0, len(s.Members))
	for _, m := range s.Members {
		if !utf8.ValidString(m.Name) || !utf8.ValidString(string(m.Role)) {
			return nil, fmt.Errorf("%w: member name or role is not valid UTF-8", ErrState)
		}
		uid, uka, role, name := encB64u(m.UID[:]), encB64u(m.UKA[:]), string(m.Role), m.Name
		wm := &wireMember{UID: &uid, Role: &role, UKA: &uka, Name: &name}
		if m.Via != nil {
			v := encB64u(m.Via[:])
			wm.Via = &v
		}
		ms = append(ms, wm)
	}
	w.Members = &ms
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// clone returns a deep copy of s.
func (s *State) clone() *State {
	c := *s
	c.Members = append([]Member(nil), s.Members...)
	return &c
}
