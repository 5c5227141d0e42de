// Package record implements Tandem's data writes and their merge
// (tandem.txt §9): validation of writes (§9.1), the hybrid logical clock
// (§9.1), supersession exactly as tandem-gaps.md "Supersession (§9.2)"
// defines it, the record state built from it (multi-value registers,
// add-wins observed-remove sets with per-element registers, sticky
// tombstones, unknown fields carried), building writes (§9.2), signing again
// into a new epoch (§11.6), and a canonical encoding of a state.
package record
