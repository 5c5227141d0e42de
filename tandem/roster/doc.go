// Package roster is the pure authorization logic of Tandem collections
// (tandem.txt §7, §8, §9.4): genesis and identity, roster statements and
// their validity, following the chain, dead collections, data-write
// eligibility, and snapshot inventories. No network, no hub.
package roster
