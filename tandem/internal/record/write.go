package record

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Write is one validated data write (§9.1): the signed body, its write ID,
// its signature, and e(x), the counter of its source epoch, which the
// roster layer computes from the body's ref (§8.3). A Write is immutable;
// the slices its accessors return must not be modified.
//
// The only ways to obtain a Write are Validator.Validate (and State.Ingest),
// Verified.InEpoch (after Validator.Verify), State.Build, Resign and
// DecodeState, so every Write held by a State has passed the checks of
// Validate.
type Write struct {
	body  suite.WriteBody
	id    [32]byte
	sig   []byte
	epoch uint64
	ok    bool // set only by the constructors above; State.Add refuses a Write without it
}

// ID returns the write ID, H(sigInput) (§5.5). Two writes with one dot are
// two writes: identity is the ID, never the dot.
func (w *Write) ID() [32]byte { return w.id }

// Body returns a copy of the signed body; its slices alias the write's.
func (w *Write) Body() suite.WriteBody { return w.body }

// Sig returns the 64-byte Ed25519 signature over sigInput.
func (w *Write) Sig() []byte { return w.sig }

// Epoch returns e(x), the counter of the write's source epoch (0 in home).
func (w *Write) Epoch() uint64 { return w.epoch }

// Record returns the record ID.
func (w *Write) Record() [16]byte { return w.body.Record }

// Field returns the field name (empty for a delete built here).
func (w *Write) Field() string { return w.body.Field }

// Op returns the operation.
func (w *Write) Op() suite.Op { return w.body.Op }

// Element returns the set element of an add or remove.
func (w *Write) Element() []byte { return w.body.Element }

// Value returns the value of an assign.
func (w *Write) Value() []byte { return w.body.Value }

// Author returns the author's user ID.
func (w *Write) Author() [32]byte { return w.body.Author }

// Dot returns the write's dot.
func (w *Write) Dot() suite.Dot { return w.body.Dot }

// Rules say which writes are valid in one scope: a collection or a home.
type Rules struct {
	// Scope is the collection ID, or the user's home scope (§5.5, §6.2).
	// A write with another scope is rejected (ErrScope).
	Scope [16]byte
	// Home marks a home scope, where every record is named (§7.3) and so no
	// delete is valid.
	Home bool
	// Names lists the app's named records (§7.3) besides _roster and _meta,
	// which are always named. A delete of any of them is invalid. A record
	// whose own valid _name write a State holds is named too, declared or
	// not; the State applies that (State.Add).
	Names []string
}

// Validator checks writes against fixed Rules. Validity depends only on the
// write and the rules, never on what else has arrived, so every device
// configured alike accepts the same writes (§8.3, §9.3).
// See docs/decisions/tandem-record-validity.md.
type Validator struct {
	rules  Rules
	named  map[[16]byte]bool
	roster [16]byte
	keys   suite.Keys // the authors' keys, decoded once (§5.5)
}

// NewValidator returns a validator for r.
func NewValidator(r Rules) *Validator {
	v := &Validator{rules: r, named: make(map[[16]byte]bool), roster: suite.NamedRecordID("_roster")}
	v.named[v.roster] = true
	v.named[suite.NamedRecordID("_meta")] = true
	for _, n := range r.Names {
		v.named[suite.NamedRecordID(n)] = true
	}
	v.rules.Names = append([]string(nil), r.Names...)
	return v
}

// Rules returns the rules v checks.
func (v *Validator) Rules() Rules { return v.rules }

// Named reports whether id is a named record under v's rules (§7.3).
func (v *Validator) Named(id [16]byte) bool { return v.rules.Home || v.named[id] }

// Validate checks one received write and returns it as a Write. epoch is
// e(x), the counter of the write's source epoch, as the roster layer found
// it; whether the author may write under body.Ref is the roster's question
// (§8.3), not this one. epoch must be a function of body.Ref, so one write
// ID always comes with one epoch. It rejects, with a wrapped sentinel error:
//
//   - a scope other than the rules' (ErrScope);
//   - an unknown op, HLC millis beyond 48 bits, an unsorted context or base,
//     or one with more than 1,024 entries (ErrMalformed, §5.5, §9.2);
//   - an element on assign or delete, a value on add, remove or delete
//     (ErrOpShape);
//   - a field name that is not UTF-8 (ErrField), or that starts with "_"
//     unless it is an assign to "_name" whose value v satisfies
//     NamedRecordID(v) = record (ErrReservedField, §7.3);
//   - any write to the _roster record (ErrReservedRecord);
//   - a delete of a named record (ErrNamedDelete, §7.3);
//   - a signature that VerifyStrict rejects (ErrSignature, §5.5).
//
// Validate is Verify followed by Verified.InEpoch. body's slices are
// copied; the caller may reuse them.
func (v *Validator) Validate(body *suite.WriteBody, sig []byte, epoch uint64) (*Write, error) {
	x, err := v.Verify(body, sig)
	if err != nil {
		return nil, err
	}
	return x.InEpoch(epoch)
}

// Verify applies every check of Validate, the signature included, to a
// received write whose source epoch is not known yet, and returns it as a
// Verified. It is the first half of Validate for a caller that learns e(x)
// later, from the roster layer (roster.Chain.CheckVerified), so that the
// write's signature is verified once on its way into a State. It rejects
// exactly what Validate rejects, with the same errors. body's slices are
// copied; the caller may reuse them.
func (v *Validator) Verify(body *suite.WriteBody, sig []byte) (*Verified, error) {
	if err := v.checkShape(body); err != nil {
		return nil, err
	}
	si, err := body.SigInput()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !v.keys.VerifyStrict(body.Author[:], si, sig) {
		return nil, ErrSignature
	}
	return &Verified{body: cloneBody(body), id: suite.WriteID(si), sig: bytes.Clone(sig), ok: true}, nil
}

// Verified is a received data write that passed every check of
// Validator.Validate, its Ed25519 signature included (§5.5, §9.1), and
// still lacks e(x), the counter of its source epoch, which the roster layer
// computes from the body's ref (§8.3). It is immutable; the slices its
// accessors return must not be modified.
//
// The only way to obtain a usable Verified is Validator.Verify: its fields
// are unexported, and a Verified made any other way (nil, or the zero
// value) is refused by InEpoch and by roster.Chain.CheckVerified with
// ErrUnverified. Holding a Verified is therefore proof that its signature
// was checked, and code that accepts one need not, and does not, check it
// again.
type Verified struct {
	body suite.WriteBody
	id   [32]byte
	sig  []byte
	ok   bool // set only by Verify
}

// Valid reports whether x was produced by Validator.Verify: false for nil
// and for the zero value.
func (x *Verified) Valid() bool { return x != nil && x.ok }

// ID returns the write ID, H(sigInput) (§5.5).
func (x *Verified) ID() [32]byte { return x.id }

// Body returns a copy of the signed body; its slices alias x's.
func (x *Verified) Body() suite.WriteBody { return x.body }

// Sig returns the 64-byte Ed25519 signature over sigInput.
func (x *Verified) Sig() []byte { return x.sig }

// InEpoch returns x as a Write whose source epoch has counter epoch, e(x).
// As with Validate, epoch must be a function of the body's ref (§8.3);
// roster.Chain.CheckVerified computes it from the followed roster. It does
// not verify the signature again. It fails with ErrUnverified if x is not
// Valid.
func (x *Verified) InEpoch(epoch uint64) (*Write, error) {
	if !x.Valid() {
		return nil, ErrUnverified
	}
	return &Write{body: x.body, id: x.id, sig: x.sig, epoch: epoch, ok: true}, nil
}

// checkShape applies every rule of Validate except the signature and the
// encodability checks that SigInput makes.
func (v *Validator) checkShape(b *suite.WriteBody) error {
	if b.Scope != v.rules.Scope {
		return ErrScope
	}
	if b.Record == v.roster {
		return ErrReservedRecord
	}
	switch b.Op {
	case suite.OpAssign:
		if len(b.Element) != 0 {
			return fmt.Errorf("%w: element on assign", ErrOpShape)
		}
	case suite.OpAdd, suite.OpRemove:
		if len(b.Value) != 0 {
			return fmt.Errorf("%w: value on op %d", ErrOpShape, b.Op)
		}
	case suite.OpDelete:
		if len(b.Element) != 0 || len(b.Value) != 0 {
			return fmt.Errorf("%w: element or value on delete", ErrOpShape)
		}
		if v.Named(b.Record) {
			return ErrNamedDelete
		}
	default:
		return fmt.Errorf("%w: op %d", ErrMalformed, b.Op)
	}
	if !utf8.ValidString(b.Field) {
		return ErrField
	}
	if strings.HasPrefix(b.Field, "_") {
		if b.Field != "_name" || b.Op != suite.OpAssign || suite.NamedRecordID(string(b.Value)) != b.Record {
			return fmt.Errorf("%w: %q", ErrReservedField, b.Field)
		}
	}
	return nil
}

func cloneBody(b *suite.WriteBody) suite.WriteBody {
	c := *b
	c.Element = bytes.Clone(b.Element)
	c.Value = bytes.Clone(b.Value)
	c.Context = append(suite.VV(nil), b.Context...)
	c.Base = append(suite.VV(nil), b.Base...)
	return c
}
