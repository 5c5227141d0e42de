// Package media is the media path of data-sync-v1 as the data layer uses it
// (§Attachments, §Documents too large for a frame, §The data purpose): a
// chunked transfer whose chunk 0 carries, inside its sealed plaintext, the
// declared total size and the data purpose mark.
//
// The package is internal so that the mark is not application-settable
// (§The data purpose: "An application asking to send a file MUST NOT be able
// to produce one"): code outside datasync cannot import it, and the one
// application-shaped entry point, [Sender.SendFile], has no purpose
// parameter.
package media
