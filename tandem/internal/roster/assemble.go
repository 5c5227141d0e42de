package roster

import (
	"bytes"
	"cmp"
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
// stored once, so duplicates are harmless.
//
// What it holds is bounded by what it was given, never by what a fragment
// claims: each version is charged its bytes plus versionCost, each group
// groupCost, and the charge stays within MaxFragmentBytes; nothing is
// allocated per claimed part. Groups are bounded per epoch and in total,
// versions per index, and the product of a group's version counts by
// MaxAssemblyTries, so an exhaustive search of a group always fits the try
// budget. See docs/decisions/tandem-roster-inventory.md.
type fragmentStore struct {
	limits   Limits
	groups   map[groupKey]*fragmentGroup
	perEpoch map[[32]byte]int // groups held per epoch
	used     int              // charge: bytes plus fixed costs
}

type groupKey struct {
	epoch [32]byte
	parts int
}

type fragmentGroup struct {
	parts    int
	versions map[int][]fragmentVersion // index → distinct versions, in arrival order
	combos   int                       // product of len(versions[i]) over held indices
}

type fragmentVersion struct {
	b    []byte
	seen time.Time
}

// Fixed charges, upper estimates of the bookkeeping behind one version (map
// entry, slice header, timestamp) and one group (map entries, struct).
const (
	versionCost = 128
	groupCost   = 256
)

func newFragmentStore(l Limits) *fragmentStore {
	return &fragmentStore{limits: l, groups: map[groupKey]*fragmentGroup{}, perEpoch: map[[32]byte]int{}}
}

// check rejects a fragment no assembly can use under the limits.
func (s *fragmentStore) check(f *Fragment) error {
	if f.Parts < 1 || f.Parts > s.limits.MaxParts || f.Part < 0 || f.Part >= f.Parts || len(f.Bytes) == 0 {
		return fragErr("part %d of %d with %d bytes", f.Part, f.Parts, len(f.Bytes))
	}
	return nil
}

// holds reports whether a fragment identical to f is held.
func (s *fragmentStore) holds(f *Fragment) bool {
	g := s.groups[groupKey{f.Epoch, f.Parts}]
	if g == nil {
		return false
	}
	return slices.ContainsFunc(g.versions[f.Part], func(v fragmentVersion) bool { return bytes.Equal(v.b, f.Bytes) })
}

func limitErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s (not final: read the fragment again later)", ErrLimit, fmt.Sprintf(format, args...))
}

// add stores f, which the caller checked and which is not held. It fails
// with ErrLimit, storing nothing, when a holding limit would be passed.
func (s *fragmentStore) add(f *Fragment, now time.Time) error {
	key := groupKey{f.Epoch, f.Parts}
	g := s.groups[key]
	charge := len(f.Bytes) + versionCost
	if g == nil {
		switch {
		case s.perEpoch[f.Epoch] >= s.limits.MaxGroupsPerEpoch:
			return limitErr("%d parts counts held for epoch %x", s.perEpoch[f.Epoch], f.Epoch[:8])
		case len(s.groups) >= s.limits.MaxGroups:
			return limitErr("%d (epoch, parts) groups held", len(s.groups))
		}
		charge += groupCost
	}
	var n, combos int
	if g != nil {
		n, combos = len(g.versions[f.Part]), g.combos
		if n > 0 {
			combos = combos / n * (n + 1)
		}
	}
	switch {
	case n >= s.limits.MaxVersions:
		return limitErr("%d versions of part %d of %d", n, f.Part, f.Parts)
	case g != nil && combos > s.limits.MaxAssemblyTries:
		return limitErr("%d combinations of versions of %d parts", g.combos, f.Parts)
	case s.used+charge > s.limits.MaxFragmentBytes:
		return limitErr("%d of %d fragment bytes held", s.used, s.limits.MaxFragmentBytes)
	}
	if g == nil {
		g = &fragmentGroup{parts: f.Parts, versions: map[int][]fragmentVersion{}, combos: 1}
		s.groups[key] = g
		s.perEpoch[f.Epoch]++
	} else {
		g.combos = combos
	}
	g.versions[f.Part] = append(g.versions[f.Part], fragmentVersion{b: bytes.Clone(f.Bytes), seen: now})
	s.used += charge
	return nil
}

// assemble looks for a complete assembly of epoch's fragments whose bytes
// hash to want, trying groups by ascending parts count. On success it
// returns the bytes and the fragments used, and drops every fragment held
// for the epoch.
func (s *fragmentStore) assemble(epoch, want [32]byte) ([]byte, []*Fragment, bool) {
	var keys []groupKey
	for k, g := range s.groups {
		if k.epoch == epoch && len(g.versions) == g.parts {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b groupKey) int { return cmp.Compare(a.parts, b.parts) })
	for _, k := range keys {
		if b, frags, ok := s.search(epoch, s.groups[k], nil, want); ok {
			s.drop(epoch)
			return b, frags, true
		}
	}
	return nil, nil, false
}

// assembleWith looks for an assembly that uses f, not held, at its index
// and held versions at every other index: the assemblies f's arrival makes
// possible. It needs no room, so no holding limit keeps the fragment that
// completes an inventory out (§10.5).
func (s *fragmentStore) assembleWith(f *Fragment, want [32]byte) ([]byte, []*Fragment, bool) {
	g := s.groups[groupKey{f.Epoch, f.Parts}]
	if g == nil {
		if f.Parts != 1 {
			return nil, nil, false
		}
		g = &fragmentGroup{parts: 1, versions: map[int][]fragmentVersion{}}
	}
	held := len(g.versions)
	if _, ok := g.versions[f.Part]; ok {
		held--
	}
	if held != g.parts-1 {
		return nil, nil, false
	}
	b, frags, ok := s.search(f.Epoch, g, f, want)
	if ok {
		s.drop(f.Epoch)
	}
	return b, frags, ok
}

// search hashes the combinations of g's versions, one per index in index
// order and with f (if not nil) fixed at its index, depth first and
// sharing the SHA-256 state of common prefixes, up to MaxAssemblyTries
// complete candidates.
func (s *fragmentStore) search(epoch [32]byte, g *fragmentGroup, f *Fragment, want [32]byte) ([]byte, []*Fragment, bool) {
	opts := make([][][]byte, g.parts)
	for i := range opts {
		if f != nil && i == f.Part {
			opts[i] = [][]byte{f.Bytes}
			continue
		}
		for _, v := range g.versions[i] {
			opts[i] = append(opts[i], v.b)
		}
	}
	choice := make([]int, g.parts)
	tries := s.limits.MaxAssemblyTries
	if !searchFrom(opts, 0, sha256.New(), want, choice, &tries) {
		return nil, nil, false
	}
	var all []byte
	frags := make([]*Fragment, g.parts)
	for i, c := range choice {
		b := bytes.Clone(opts[i][c])
		all = append(all, b...)
		frags[i] = &Fragment{Epoch: epoch, Part: i, Parts: g.parts, Bytes: b}
	}
	return all, frags, true
}

// searchFrom extends the hash h of indices [0, i) with each option of
// index i.
func searchFrom(opts [][][]byte, i int, h hash.Hash, want [32]byte, choice []int, tries *int) bool {
	for ; i < len(opts) && len(opts[i]) == 1; i++ { // no branching: no copy
		h.Write(opts[i][0])
		choice[i] = 0
	}
	if i == len(opts) {
		*tries--
		return [32]byte(h.Sum(nil)) == want
	}
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return false
	}
	for v := range opts[i] {
		if *tries <= 0 {
			return false
		}
		hv := sha256.New()
		if hv.(encoding.BinaryUnmarshaler).UnmarshalBinary(state) != nil {
			return false
		}
		hv.Write(opts[i][v])
		choice[i] = v
		if searchFrom(opts, i+1, hv, want, choice, tries) {
			return true
		}
	}
	return false
}

// drop forgets every fragment held for epoch.
func (s *fragmentStore) drop(epoch [32]byte) {
	for k, g := range s.groups {
		if k.epoch == epoch {
			s.dropGroup(k, g)
		}
	}
}

func (s *fragmentStore) dropGroup(k groupKey, g *fragmentGroup) {
	for _, vs := range g.versions {
		for _, v := range vs {
			s.used -= len(v.b) + versionCost
		}
	}
	s.used -= groupCost
	delete(s.groups, k)
	if s.perEpoch[k.epoch]--; s.perEpoch[k.epoch] <= 0 {
		delete(s.perEpoch, k.epoch)
	}
}

// expire drops fragment versions first seen before cutoff, and groups left
// empty.
func (s *fragmentStore) expire(cutoff time.Time) int {
	n := 0
	for k, g := range s.groups {
		g.combos = 1
		for i, vs := range g.versions {
			kept := vs[:0]
			for _, v := range vs {
				if v.seen.Before(cutoff) {
					s.used -= len(v.b) + versionCost
					n++
					continue
				}
				kept = append(kept, v)
			}
			clear(vs[len(kept):])
			if len(kept) == 0 {
				delete(g.versions, i)
				continue
			}
			g.versions[i] = kept
			g.combos *= len(kept)
		}
		if len(g.versions) == 0 {
			s.dropGroup(k, g)
		}
	}
	return n
}
