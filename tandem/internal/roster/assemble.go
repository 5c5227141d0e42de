package roster

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"slices"
	"time"
)

// fragmentStore holds inventory fragments until a complete assembly whose
// hash matches the epoch's snapshot commitment exists (§8.3, §10.5).
// Fragments are grouped by (epoch, parts); within a group each index may
// have several different versions, held apart. Identical fragments are
// stored once, so duplicates are harmless. See
// docs/decisions/tandem-roster-inventory.md.
type fragmentStore struct {
	limits Limits
	epochs map[[32]byte]*epochFragments
	total  int // bytes held
}

type epochFragments struct {
	groups map[int]*fragmentGroup // parts → group
}

type fragmentGroup struct {
	parts    int
	versions [][]fragmentVersion // index → distinct versions, in arrival order
}

type fragmentVersion struct {
	b    []byte
	seen time.Time
}

func newFragmentStore(l Limits) *fragmentStore {
	return &fragmentStore{limits: l, epochs: map[[32]byte]*epochFragments{}}
}

// add stores f unless an identical fragment is held. It fails with ErrLimit
// when the index already holds MaxVersions versions or the store would
// exceed MaxFragmentBytes; nothing is stored then.
func (s *fragmentStore) add(f *Fragment, now time.Time) error {
	if f.Parts < 1 || f.Parts > s.limits.MaxParts || f.Part < 0 || f.Part >= f.Parts || len(f.Bytes) == 0 {
		return fragErr("part %d of %d with %d bytes", f.Part, f.Parts, len(f.Bytes))
	}
	e := s.epochs[f.Epoch]
	if e == nil {
		e = &epochFragments{groups: map[int]*fragmentGroup{}}
	}
	g := e.groups[f.Parts]
	if g == nil {
		g = &fragmentGroup{parts: f.Parts, versions: make([][]fragmentVersion, f.Parts)}
	}
	for _, v := range g.versions[f.Part] {
		if bytes.Equal(v.b, f.Bytes) {
			return nil
		}
	}
	if len(g.versions[f.Part]) >= s.limits.MaxVersions {
		return fmt.Errorf("%w: %d versions of part %d of %d", ErrLimit, len(g.versions[f.Part]), f.Part, f.Parts)
	}
	if s.total+len(f.Bytes) > s.limits.MaxFragmentBytes {
		return fmt.Errorf("%w: %d fragment bytes held", ErrLimit, s.total)
	}
	g.versions[f.Part] = append(g.versions[f.Part], fragmentVersion{b: bytes.Clone(f.Bytes), seen: now})
	e.groups[f.Parts] = g
	s.epochs[f.Epoch] = e
	s.total += len(f.Bytes)
	return nil
}

// assemble looks for a complete assembly of epoch's fragments whose bytes
// hash to want. Groups are tried in order of their parts count; within a
// group, combinations of versions are hashed depth first, sharing the hash
// state of common prefixes, up to MaxAssemblyTries complete combinations.
// On success it returns the bytes and the fragments used, and drops every
// fragment held for the epoch.
func (s *fragmentStore) assemble(epoch [32]byte, want [32]byte) ([]byte, []*Fragment, bool) {
	e := s.epochs[epoch]
	if e == nil {
		return nil, nil, false
	}
	parts := make([]int, 0, len(e.groups))
	for p := range e.groups {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	tries := s.limits.MaxAssemblyTries
	for _, p := range parts {
		g := e.groups[p]
		if !g.complete() {
			continue
		}
		choice := make([]int, g.parts)
		if g.search(0, sha256.New(), want, choice, &tries) {
			return s.take(epoch, g, choice)
		}
	}
	return nil, nil, false
}

func (g *fragmentGroup) complete() bool {
	for _, vs := range g.versions {
		if len(vs) == 0 {
			return false
		}
	}
	return true
}

// search extends the hash h of parts [0, i) with each version of part i.
func (g *fragmentGroup) search(i int, h hash.Hash, want [32]byte, choice []int, tries *int) bool {
	for ; i < g.parts && len(g.versions[i]) == 1; i++ { // no branching: no copy
		h.Write(g.versions[i][0].b)
		choice[i] = 0
	}
	if i == g.parts {
		*tries--
		return [32]byte(h.Sum(nil)) == want
	}
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return false
	}
	for v := range g.versions[i] {
		if *tries <= 0 {
			return false
		}
		hv := sha256.New()
		if hv.(encoding.BinaryUnmarshaler).UnmarshalBinary(state) != nil {
			return false
		}
		hv.Write(g.versions[i][v].b)
		choice[i] = v
		if g.search(i+1, hv, want, choice, tries) {
			return true
		}
	}
	return false
}

func (s *fragmentStore) take(epoch [32]byte, g *fragmentGroup, choice []int) ([]byte, []*Fragment, bool) {
	var all []byte
	frags := make([]*Fragment, g.parts)
	for i, v := range choice {
		b := g.versions[i][v].b
		all = append(all, b...)
		frags[i] = &Fragment{Epoch: epoch, Part: i, Parts: g.parts, Bytes: b}
	}
	s.drop(epoch)
	return all, frags, true
}

func (s *fragmentStore) drop(epoch [32]byte) {
	for _, g := range s.epochs[epoch].groups {
		for _, vs := range g.versions {
			for _, v := range vs {
				s.total -= len(v.b)
			}
		}
	}
	delete(s.epochs, epoch)
}

// expire drops fragment versions first seen before cutoff.
func (s *fragmentStore) expire(cutoff time.Time) int {
	n := 0
	for epoch, e := range s.epochs {
		for p, g := range e.groups {
			empty := true
			for i, vs := range g.versions {
				kept := vs[:0]
				for _, v := range vs {
					if v.seen.Before(cutoff) {
						s.total -= len(v.b)
						n++
						continue
					}
					kept = append(kept, v)
				}
				g.versions[i] = kept
				empty = empty && len(kept) == 0
			}
			if empty {
				delete(e.groups, p)
			}
		}
		if len(e.groups) == 0 {
			delete(s.epochs, epoch)
		}
	}
	return n
}
