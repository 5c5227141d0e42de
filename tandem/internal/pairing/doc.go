// Package pairing is the wire side of adding a device (§6.3) behind
// tandem.AddDevice and tandem.JoinDevice: the QR payload and the three
// channel messages (wire.go), the kind-3 pairing channel on a hub
// connection of its own (channel.go), and the two sessions, the showing
// device's Offer (offer.go) and the new device's Join (join.go).
//
// Package tandem opens the hub connection, installs the identity a Join
// receives, and turns this package's errors (the sentinels of errors.go,
// and the hub's errors, passed through) into *tandem.Error. The wire
// details the spec leaves open: docs/decisions/tandem-pairing.md.
package pairing
