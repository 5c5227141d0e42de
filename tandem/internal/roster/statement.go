package roster

import (
	"bytes"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Reserved names of §7.3 and §9.4.
const (
	// RosterRecordName is the reserved record holding the statements.
	RosterRecordName = "_roster"
	// MetaRecordName is the reserved record only the owner writes (§8.3).
	MetaRecordName = "_meta"
	// StatementField is the field a statement assigns (§9.4).
	StatementField = "s"
)

var (
	rosterRecord = suite.NamedRecordID(RosterRecordName)
	metaRecord   = suite.NamedRecordID(MetaRecordName)
)

// RosterRecordID is id("_roster") (§7.3).
func RosterRecordID() [16]byte { return rosterRecord }

// MetaRecordID is id("_meta") (§7.3).
func MetaRecordID() [16]byte { return metaRecord }

// Statement is one signed roster statement: an assign write to field s of
// _roster carrying the complete JSON state (§9.4). Its value bytes are kept
// exactly as signed and never re-serialized. State is nil when the value
// does not parse; ParseErr then says why. Such a statement is still kept,
// since an owner-signed statement counts as a successor even when invalid
// (§9.4). A Statement is immutable once made.
//
// Its fields are unexported and NewStatement is the only way to make one,
// so holding a *Statement is proof that its signature was checked: a
// Statement literal or a zero value is refused by Chain.Add (ErrUnverified).
type Statement struct {
	id       [32]byte
	body     suite.WriteBody
	sig      []byte
	state    *State
	parseErr error
	verified bool // set only by NewStatement
}

// ID returns the statement ID (its write ID, §9.4).
func (st *Statement) ID() [32]byte { return st.id }

// Body returns the signed body; its slices must not be modified.
func (st *Statement) Body() suite.WriteBody { return st.body }

// Sig returns the 64-byte signature.
func (st *Statement) Sig() []byte { return st.sig }

// State returns the parsed roster state, or nil when the value does not
// parse (ParseErr says why).
func (st *Statement) State() *State { return st.state }

// ParseErr says why the value does not parse as a roster state; nil when it does.
func (st *Statement) ParseErr() error { return st.parseErr }

// Verified reports whether st was made by NewStatement: false for nil and
// for a zero value or literal.
func (st *Statement) Verified() bool { return st != nil && st.verified }

// NewStatement checks sig over body with strict verification (§5.5) against
// body.Author, computes the statement ID (the write ID) and parses the
// state. It copies body and sig. It fails, wrapping ErrRejected and
// ErrSignature, if the signature does not verify or the body cannot be
// signed at all; it does not judge whether the statement is a valid roster
// statement (see ValidateGenesis and Roster.Validate).
func NewStatement(body suite.WriteBody, sig []byte) (*Statement, error) {
	body = cloneBody(body)
	id, err := suite.VerifyWrite(&body, sig)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %w", ErrRejected, ErrSignature, err)
	}
	st := &Statement{id: id, body: body, sig: bytes.Clone(sig), verified: true}
	st.state, st.parseErr = ParseState(body.Value)
	return st, nil
}

// isRosterWrite reports whether the statement is a write to _roster, the
// only writes that count as successors (§9.4).
func (st *Statement) isRosterWrite() bool { return st.Body().Record == rosterRecord }

// Parent is the ID of the statement this one follows (its ref, §9.4).
func (st *Statement) Parent() [32]byte { return st.Body().Ref }

func cloneBody(b suite.WriteBody) suite.WriteBody {
	b.Element = bytes.Clone(b.Element)
	b.Value = bytes.Clone(b.Value)
	b.Context = append(suite.VV(nil), b.Context...)
	b.Base = append(suite.VV(nil), b.Base...)
	return b
}
