package tandem

import (
	"errors"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// Every method of Device that takes a CollectionID reports a collection
// the device does not follow the same way: the *Error of noCollection,
// CodeNotFound, found by collection before the method does anything
// (docs/decisions/tandem-collection-api.md).

// msgNoCollection is the message of an unknown collection.
const msgNoCollection = "no such list on this device"

// noCollection is the one error of an unknown collection; err is the
// engine's, when it was the one that noticed.
func noCollection(err error) *Error {
	if err == nil {
		err = client.ErrUnknownCollection
	}
	return newErr(CodeNotFound, err, msgNoCollection)
}

// collection returns the engine when the device follows c, else the
// device's own error (closed, damaged) or noCollection.
func (d *Device) collection(c CollectionID) (*client.Device, error) {
	eng, err := d.engine()
	if err != nil {
		return nil, err
	}
	if !eng.Follows(client.CollectionID(c)) {
		return nil, noCollection(nil)
	}
	return eng, nil
}

// collErr turns an engine error of a read into an *Error: an unknown
// collection (one that went between collection and the read) as
// noCollection.
func (d *Device) collErr(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, client.ErrUnknownCollection):
		return noCollection(err)
	}
	return newErr(CodeInternal, err, "this list could not be read")
}
