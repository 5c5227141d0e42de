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
	// MaxFragmentBytes bounds the fragment bytes held for inventories not
	// yet assembled, over all epochs. Default 64 MiB (§10.6).
	MaxFragmentBytes int
	// MaxVersions bounds the different versions held for one fragment
	// index of one epoch. Default 4.
	MaxVersions int
	// MaxAssemblyTries bounds how many combinations of versions one
	// assembly attempt hashes. Default 1024.
	MaxAssemblyTries int
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
	return l
}

// Options configure a Chain.
type Options struct {
	Limits Limits
	// Now is the clock used for holding limits; nil means time.Now.
	Now func() time.Time
}
