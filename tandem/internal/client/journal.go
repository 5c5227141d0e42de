package client

import (
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Journal persists a device's changes. The durable device (package tandem)
// implements it with SQLite; a nil Journal keeps everything in memory.
//
// Commit is called with every change of state, and must store the Deltas,
// in order, atomically or nothing of them. For a local edit (Write,
// CreateCollection) it is called before the call that made it returns and
// before the edit enters the in-memory state, so a failed Commit leaves the
// device unchanged. What Sync merges is committed after it was merged in
// memory, several fetched batches per call (at most about syncCommitItems
// writes and index entries) and before Sync returns; a failed Commit then
// leaves the device Broken: its memory is ahead of its disk, and the owner
// must reopen it from the journal (package tandem does so). Nothing is lost
// when a crash comes before such a commit: the messages it covered are
// still unread in the journal and are read again.
type Journal interface {
	Commit(...*Delta) error
}

// MsgState is what a device did with a hub message.
type MsgState uint8

// Message states, as the journal stores them.
const (
	MsgTodo     MsgState = iota // listed by Changes, not judged yet
	MsgDone                     // applied, ignored, or published by this device
	MsgRejected                 // rejected for good: never fetched again
	MsgHeld                     // held for a missing dependency (§8.3, §9.4)
	MsgOwn                      // appended by this device after the saved cursor: the next Changes lists it, or it was destroyed meanwhile
	MsgPending                  // a sharing message waiting for a decision or a dependency; read again after a restart
	MsgAnswered                 // a join request answered: destroyed after the push
	MsgRefused                  // refused for a holding bound: not downloaded again until the bound frees (bounds.go)
)

// Delta is one atomic change of a device's persisted state.
type Delta struct {
	HLC           suite.HLC       // the clock's last value (§9.1: never goes back)
	Writes        []*record.Write // writes newly kept in home or a collection (the scope is the body's)
	Statements    []SavedStatement
	Fragments     []SavedFragment
	Msgs          []SavedMsg // upserts of the message index
	Gone          []hub.ID   // messages no longer in the folder
	OutAdd        []SavedOut
	OutDel        []uint64 // outbox sequence numbers published
	Cursor        hub.Cursor
	CursorSet     bool
	HeldAdd       []SavedHeld
	HeldDel       []hub.ID
	Rotations     []SavedRotation // rotations begun or advanced (upserts)
	RotationsDone []CollectionID  // rotations finished
}

func (x *Delta) empty() bool {
	return len(x.Writes)+len(x.Statements)+len(x.Fragments)+len(x.Msgs)+len(x.Gone)+
		len(x.OutAdd)+len(x.OutDel)+len(x.HeldAdd)+len(x.HeldDel)+len(x.Rotations)+len(x.RotationsDone) == 0 && !x.CursorSet
}

// SavedStatement is a roster statement the chain of collection Collection
// kept, read in epoch channel Origin (zero: created here).
type SavedStatement struct {
	Collection CollectionID
	Origin     [32]byte
	Payload    []byte // a §10.5 record payload of _roster holding the statement
}

// savedStatement makes the journal entry of st. d.mu is held.
func savedStatement(c CollectionID, origin [32]byte, body suite.WriteBody, sig []byte) SavedStatement {
	p, _ := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: body, Sig: sig}}})
	return SavedStatement{Collection: c, Origin: origin, Payload: p}
}

// SavedFragment is an inventory fragment payload the chain took.
type SavedFragment struct {
	Collection CollectionID
	Payload    []byte
}

// SavedMsg is one entry of the message index.
type SavedMsg struct {
	ID      hub.ID
	Channel string
	State   MsgState
	Hash    [32]byte // H(envelope), zero until fetched
	Kind    uint8    // what the message holds (0 until fetched)
	Rec     [16]byte // the record of a record-state message
	Writes  []byte   // the IDs of its writes, 32 bytes each
	// Of a message refused for a holding bound: its size and when it was
	// first seen (§9.4).
	Size      int64
	FirstSeen time.Time
}

// SavedOut is one outbox entry: a sealed envelope, or (Envelope nil) a
// dirty record Rec to publish as its current state.
type SavedOut struct {
	Seq      uint64
	Channel  string
	Envelope []byte
	Rec      [16]byte
	Dirty    bool
	Kind     uint8  // of an envelope: what it holds
	Writes   []byte // of an envelope: its write or statement IDs, 32 bytes each
	Auto     bool   // an automatic answer (answers.go)
}

func joinIDs(ids [][32]byte) []byte {
	b := make([]byte, 0, 32*len(ids))
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	return b
}

func splitIDs(b []byte) [][32]byte {
	var out [][32]byte
	for i := 0; i+32 <= len(b); i += 32 {
		out = append(out, [32]byte(b[i:i+32]))
	}
	return out
}

func savedOut(m outMsg) SavedOut {
	return SavedOut{Seq: m.seq, Channel: m.channel, Envelope: m.envelope, Rec: m.rec, Dirty: m.dirty, Kind: uint8(m.kind), Writes: joinIDs(m.ids), Auto: m.auto}
}

// SavedHeld is a message held for a missing dependency, with its envelope
// (judged again on restore) and the time it was first seen (§9.4 holding
// limits).
type SavedHeld struct {
	ID        hub.ID
	Channel   string
	Envelope  []byte
	FirstSeen time.Time
}
