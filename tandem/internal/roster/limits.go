package roster

import "time"

// Limits bound what a Chain holds while it waits for missing pieces
// (§8.3, §9.4, §10.6). The zero value of a field means its default.
type Limits struct {
	// HoldFor is how long an incomplete item (a statement whose parent is
	// missing, fragments of an inventory not yet assembled) is held before
	// Expire may evict it locally. Default 30 days (§9.4). Eviction never
	// destroys anything on the hub and never touches the two statements
	// that prove a collection dead.
	HoldFor time.Duration
	// MaxHeldStatements bounds statements held without a known parent, and
	// statements held before the genesis is known. Default 4096.
	MaxHeldStatements int
	// MaxFragmentBytes bounds the memory held for inventory fragments not
	// yet assembled, over all epochs: each version held is charged its
	// bytes plus a small fixed cost, each (epoch, parts) group another;
	// nothing is charged or allocated for the parts a fragment only
	// claims. Default 64 MiB (§10.6).
	MaxFragmentBytes int
	// MaxVersions bounds the different versions held for one index of one
	// (epoch, parts) group. Default 4.
	MaxVersions int
	// MaxAssemblyTries bounds, for each (epoch, parts) group, the product
	// of its indices' version counts, so that an exhaustive search of a
	// group hashes at most this many candidates and always finishes within
	// this budget. Default 1024.
	MaxAssemblyTries int
	// MaxGroupsPerEpoch bounds the distinct parts counts held for one
	// epoch, MaxGroups the distinct (epoch, parts) pairs over all epochs.
	// Defaults 8 and 64.
	MaxGroupsPerEpoch int
	MaxGroups         int
	// MaxParts bounds the parts count a fragment may claim. Default 65536.
	MaxParts int
}

// Defaults of Limits.
const (
	DefaultHoldFor           = 30 * 24 * time.Hour
	DefaultMaxHeldStatements = 4096
	DefaultMaxFragmentBytes  = 64 << 20
	DefaultMaxVersions       = 4
	DefaultMaxAssemblyTries  = 1024
	DefaultMaxParts          = 1 << 16
	DefaultMaxGroupsPerEpoch = 8
	DefaultMaxGroups         = 64
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.HoldFor <= 0 {
		l.HoldFor = DefaultHoldFor
	}
	def(&l.MaxHeldStatements, DefaultMaxHeldStatements)
	def(&l.MaxFragmentBytes, DefaultMaxFragmentBytes)
	def(&l.MaxVersions, DefaultMaxVersions)
	def(&l.MaxAssemblyTries, DefaultMaxAssemblyTries)
	def(&l.MaxParts, DefaultMaxParts)
	def(&l.MaxGroupsPerEpoch, DefaultMaxGroupsPerEpoch)
	def(&l.MaxGroups, DefaultMaxGroups)
	return l
}

// Options configure a Chain.
type Options struct {
	Limits Limits
	// Now is the clock used for holding limits; nil means time.Now.
	Now func() time.Time
}
