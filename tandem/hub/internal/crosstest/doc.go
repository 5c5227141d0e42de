// Package crosstest holds the tests that read one account through both
// hub bindings (imaphub and jmaphub, on one Cyrus account) and require
// them to agree message by message (§10.4: one reading). It has no code of
// its own beyond the tests.
package crosstest
