package client

import (
	"fmt"
	"io"

	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// crdtMessage is a DbChange with its Timestamp.
type crdtMessage struct {
	Timestamp protocol.Timestamp
	Change    DbChange
}

// newPushRequest is createProtocolMessageFromCrdtMessages: it encrypts the
// messages one by one into a Request with the owner's write key while they
// fit maxSize (0: 1 MB). When one does not fit, it stops and appends a
// Fingerprint range with the infinite bound and a random fingerprint, so the
// relay answers with ranges and a later round sends the rest. random
// supplies the nonces and that fingerprint. It returns the message and how
// many changes it carries.
func newPushRequest(random io.Reader, o Owner, msgs []crdtMessage, maxSize int) ([]byte, int, error) {
	buf := protocol.NewMessageBuffer(o.id, protocol.BufferOptions{Type: protocol.Request, WriteKey: &o.writeKey, TotalMaxSize: maxSize})
	n := 0
	for _, m := range msgs {
		enc, err := changecodec.EncryptChange(random, m.Timestamp, m.Change, o.encryptionKey)
		if err != nil {
			return nil, 0, err
		}
		em := protocol.EncryptedMessage{Timestamp: m.Timestamp, Change: enc}
		if !buf.CanAddMessage(em) {
			break
		}
		if err := buf.AddMessage(em); err != nil {
			return nil, 0, err
		}
		n++
	}
	if n < len(msgs) {
		var fp protocol.Fingerprint
		if _, err := io.ReadFull(random, fp[:]); err != nil {
			return nil, 0, fmt.Errorf("evolu: random fingerprint: %w", err)
		}
		if err := buf.AddFingerprint(protocol.InfiniteUpperBound, fp); err != nil {
			return nil, 0, err
		}
	}
	b, err := buf.Bytes()
	return b, n, err
}
