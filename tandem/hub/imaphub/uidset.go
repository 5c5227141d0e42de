package imaphub

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// uidSet is a set of UIDs as sorted, disjoint, non-adjacent ranges: the
// sequence-set syntax of RFC 9051 ("1:3,5,7:9") without "*".
type uidSet []uidRange

type uidRange struct{ lo, hi uint32 }

// setOf returns the set of uids (any order, duplicates allowed).
func setOf(uids []uint32) uidSet {
	u := slices.Clone(uids)
	slices.Sort(u)
	var s uidSet
	for _, x := range u {
		if n := len(s); n > 0 && uint64(x) <= uint64(s[n-1].hi)+1 {
			s[n-1].hi = max(s[n-1].hi, x)
			continue
		}
		s = append(s, uidRange{x, x})
	}
	return s
}

func (s uidSet) contains(x uint32) bool {
	_, found := slices.BinarySearchFunc(s, x, func(r uidRange, x uint32) int {
		switch {
		case r.hi < x:
			return -1
		case r.lo > x:
			return 1
		}
		return 0
	})
	return found
}

// uids lists the members in order.
func (s uidSet) uids() []uint32 {
	var out []uint32
	for _, r := range s {
		for x := r.lo; ; x++ {
			out = append(out, x)
			if x == r.hi {
				break
			}
		}
	}
	return out
}

func (s uidSet) count() int {
	n := 0
	for _, r := range s {
		n += int(r.hi-r.lo) + 1
	}
	return n
}

func (s uidSet) String() string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(uint64(r.lo), 10))
		if r.hi != r.lo {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(r.hi), 10))
		}
	}
	return b.String()
}

var errBadSet = errors.New("malformed UID set")

// parseSet parses a sequence set of non-zero numbers; a:b and b:a are the same.
func parseSet(s string) (uidSet, error) {
	var ranges []uidRange
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, ":")
		a, err := strconv.ParseUint(lo, 10, 32)
		if err != nil || a == 0 {
			return nil, errBadSet
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 32); err != nil || b == 0 {
				return nil, errBadSet
			}
		}
		if a > b {
			a, b = b, a
		}
		ranges = append(ranges, uidRange{uint32(a), uint32(b)})
		if len(ranges) > 1<<16 {
			return nil, errBadSet
		}
	}
	slices.SortFunc(ranges, func(x, y uidRange) int { return int(int64(x.lo) - int64(y.lo)) })
	var out uidSet
	for _, r := range ranges {
		if n := len(out); n > 0 && uint64(r.lo) <= uint64(out[n-1].hi)+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
