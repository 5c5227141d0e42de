package jmaphub

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// maxAppendBatch caps the creates of one Email/set, so that a batch fits
// the default append budget (hub.DefaultRates) with room to spare.
const maxAppendBatch = 256

// createOverhead bounds the JSON of one Email/set create besides its body
// value, for keeping a batch under the session's maxSizeRequest.
const createOverhead = 1024

// Append stores one message (§10.2 append). See appendBatch.
func (st *Store) Append(ctx context.Context, channel string, envelope []byte) (hub.ID, error) {
	ids, err := st.appendBatch(ctx, []hub.Message{{Channel: channel, Envelope: envelope}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// appendBatch stores messages with Email/set create (§10.2): each in the
// Tandem mailbox only, with keyword $seen, the header fields Tandem-Version
// and Tandem-Channel (as text), and the §10.4 body as a text/plain body
// value. The server chooses the stored charset and transfer encoding
// (RFC 8621 §4.6). Creates are sent in batches of at most the session's
// maxObjectsInSet and, together, under its maxSizeRequest.
//
// Every message is checked first (hub.ErrBadChannel, hub.ErrNotEnvelope,
// hub.ErrUnknownVersion, hub.ErrTooLarge): one bad message fails the call
// before anything is sent. On a later error the returned slice still holds
// the ids of the messages that were stored ("" for the others); the caller
// knows its messages by H(envelope) anyway (§10.2, last paragraph).
func (st *Store) appendBatch(ctx context.Context, msgs []hub.Message) ([]hub.ID, error) {
	now := time.Now()
	for _, m := range msgs {
		// hub.Build applies exactly the checks of an IMAP append (§10.4,
		// §10.6); the bytes it builds are not used here.
		if _, err := hub.Build(m.Channel, m.Envelope, now); err != nil {
			return nil, wrapOp("append", err)
		}
	}
	mb, err := st.ensureMailbox(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]hub.ID, len(msgs))
	retried := false
	for lo := 0; lo < len(msgs); {
		hi := st.batchEnd(msgs, lo)
		if err := st.c.cfg.Budget.Append(hi - lo); err != nil {
			return ids, wrapOp("append", err)
		}
		err := st.appendRange(ctx, mb, msgs, ids, lo, hi, now)
		if errors.Is(err, errMailboxGone) && !retried {
			// The mailbox was destroyed under us (a server with delayed
			// delete, such as Cyrus, still files new mail into it): the
			// range went nowhere; look the mailbox up again and redo it.
			retried = true
			st.forgetMailbox(mb)
			if mb, err = st.ensureMailbox(ctx); err != nil {
				return ids, err
			}
			continue
		}
		if err != nil && !retried && noneCreated(ids[lo:hi]) && isInvalidProperties(err) {
			// The cached mailbox may have been destroyed by another
			// client: look it up again, and retry once if it changed.
			retried = true
			st.forgetMailbox(mb)
			if fresh, ferr := st.ensureMailbox(ctx); ferr == nil && fresh != mb {
				mb = fresh
				continue
			}
		}
		if err != nil {
			return ids, wrapOp("append", err)
		}
		lo = hi
	}
	return ids, nil
}

func noneCreated(ids []hub.ID) bool {
	for _, id := range ids {
		if id != "" {
			return false
		}
	}
	return true
}

func isInvalidProperties(err error) bool {
	var se *SetError
	return errors.As(err, &se) && se.Type == "invalidProperties"
}

// batchEnd returns the end of the batch starting at lo: at most
// maxObjectsInSet creates whose estimated size fits maxSizeRequest.
func (st *Store) batchEnd(msgs []hub.Message, lo int) int {
	budget := st.s.maxSizeRequest - 4096
	hi := lo
	for hi < len(msgs) && hi-lo < min(st.s.maxObjectsInSet, maxAppendBatch) {
		size := int64(hub.BodySize(len(msgs[hi].Envelope)) + createOverhead)
		if hi > lo && size > budget {
			break
		}
		budget -= size
		hi++
	}
	return hi
}

func (st *Store) appendRange(ctx context.Context, mb string, msgs []hub.Message, ids []hub.ID, lo, hi int, now time.Time) error {
	create := make(map[string]any, hi-lo)
	for i := lo; i < hi; i++ {
		create["m"+strconv.Itoa(i)] = emailCreate(mb, msgs[i], now)
	}
	var set setResp
	var check mailboxCheck
	calls := append([]call{{"Email/set", map[string]any{"accountId": st.s.accountID, "create": create}, &set}},
		st.mailboxCheckCalls(1, &check)...)
	err := st.request(ctx, calls...)
	if err != nil {
		return err
	}
	if check.gone(mb) {
		st.dropOrphans(ctx, set)
		return errMailboxGone
	}
	var firstErr error
	for i := lo; i < hi; i++ {
		cid := "m" + strconv.Itoa(i)
		if c, ok := set.Created[cid]; ok && c.ID != "" {
			ids[i] = hub.ID(c.ID)
			continue
		}
		if e, ok := set.NotCreated[cid]; ok && e.Type == "alreadyExists" && e.ExistingID != "" {
			// The same create (same Message-ID) was stored by an earlier
			// try of this request whose answer was lost, e.g. a 5xx
			// after the work was done (Cyrus keeps one email per
			// Message-ID in a mailbox): that email is this message.
			ids[i] = hub.ID(e.ExistingID)
			continue
		}
		if firstErr != nil {
			continue
		}
		if e, ok := set.NotCreated[cid]; ok {
			firstErr = &SetError{Method: "Email/set", ID: cid, Type: e.Type, Description: e.Description}
		} else {
			firstErr = badResponse("Email/set", "creation %s neither created nor refused", cid)
		}
	}
	return firstErr
}

// emailCreate is the Email object of §10.2 append for one message: the
// fields of §10.4 as JMAP properties.
func emailCreate(mb string, m hub.Message, now time.Time) map[string]any {
	return map[string]any{
		"mailboxIds": map[string]bool{mb: true},
		"keywords":   map[string]bool{"$seen": true},
		"from":       []map[string]string{{"name": "Tandem", "email": "tandem@invalid"}},
		"subject":    "tandem",
		"sentAt":     now.UTC().Format(time.RFC3339),
		"messageId":  []string{strings.ToLower(rand.Text()) + "@tandem.invalid"},

		"header:" + hub.HeaderVersion + ":asText": hub.Version,
		"header:" + hub.HeaderChannel + ":asText": m.Channel,

		"bodyStructure": map[string]string{"type": "text/plain", "partId": "1"},
		"bodyValues":    map[string]any{"1": map[string]string{"value": hub.EncodeBody(m.Envelope)}},
	}
}

// dropOrphans destroys, best effort, the emails an Email/set created in a
// mailbox that was gone by the time the request ended: they are in no
// Tandem mailbox and would only take space. Errors are ignored; the caller
// appends those messages again into the current mailbox.
func (st *Store) dropOrphans(ctx context.Context, set setResp) {
	var orphans []string
	for _, c := range set.Created {
		if c.ID != "" {
			orphans = append(orphans, c.ID)
		}
	}
	if len(orphans) == 0 {
		return
	}
	var r setResp
	_ = st.request(ctx, call{"Email/set", map[string]any{"accountId": st.s.accountID, "destroy": orphans}, &r})
}
