package jmaphub

import (
	"context"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Fetch batching. Up to fetchBatch ids go in one Email/get unseen: even 64
// messages near 1 MiB stay below maxResponseBytes. Larger fetches first read
// every message's size and group them up to fetchBudget bytes per Email/get.
const (
	fetchBatch  = 64
	fetchBudget = 16 << 20
)

type bodyPart struct {
	PartID string `json:"partId"`
}

type bodyValue struct {
	Value             string `json:"value"`
	IsEncodingProblem bool   `json:"isEncodingProblem"`
	IsTruncated       bool   `json:"isTruncated"`
}

// emailBody is what fetch reads of an Email.
type emailBody struct {
	ID         string               `json:"id"`
	BlobID     string               `json:"blobId"`
	MailboxIDs map[string]bool      `json:"mailboxIds"`
	Channel    *string              `json:"header:Tandem-Channel:asRaw"`
	Version    *string              `json:"header:Tandem-Version:asRaw"`
	CType      []string             `json:"header:Content-Type:asRaw:all"`
	CTE        []string             `json:"header:Content-Transfer-Encoding:asRaw:all"`
	TextBody   []bodyPart           `json:"textBody"`
	BodyValues map[string]bodyValue `json:"bodyValues"`
}

var bodyProperties = []string{
	"id", "blobId", "mailboxIds", "header:Tandem-Channel:asRaw", "header:Tandem-Version:asRaw",
	"header:Content-Type:asRaw:all", "header:Content-Transfer-Encoding:asRaw:all", "textBody", "bodyValues",
}

// Fetch downloads and decodes bodies (§10.2 fetch): Email/get with
// fetchTextBodyValues, whose value arrives already undone of its transfer
// encoding and charset (RFC 8621 §4.1.4), so only step 3 of §10.4 remains.
// A value flagged isEncodingProblem (or isTruncated) is not trusted: the raw
// message is downloaded by its blobId and read as an IMAP reader reads it.
// A message no longer in the Tandem mailbox gets hub.ErrNotFound.
func (st *Store) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	mb, err := st.ensureMailbox(ctx)
	if err != nil {
		return nil, err
	}
	ranges := batches(len(ids), min(fetchBatch, st.s.maxObjectsInGet))
	if len(ids) > fetchBatch {
		if ranges, err = st.sizedBatches(ctx, ids); err != nil {
			return nil, wrapOp("fetch", err)
		}
	}
	out := make([]hub.Body, len(ids))
	for _, b := range ranges {
		if err := st.fetchRange(ctx, mb, ids, out, b[0], b[1]); err != nil {
			return nil, wrapOp("fetch", err)
		}
	}
	return out, nil
}

// sizedBatches reads the size of each email and splits ids into ranges of at
// most maxObjectsInGet ids and fetchBudget bytes (at least one id each).
func (st *Store) sizedBatches(ctx context.Context, ids []hub.ID) ([][2]int, error) {
	size := make(map[string]int64, len(ids))
	for _, b := range batches(len(ids), st.s.maxObjectsInGet) {
		want := make([]string, 0, b[1]-b[0])
		for _, id := range ids[b[0]:b[1]] {
			want = append(want, string(id))
		}
		var r struct {
			List []struct {
				ID   string `json:"id"`
				Size int64  `json:"size"`
			} `json:"list"`
		}
		err := st.request(ctx, call{"Email/get", map[string]any{
			"accountId": st.s.accountID, "ids": want, "properties": []string{"id", "size"},
		}, &r})
		if err != nil {
			return nil, err
		}
		for _, e := range r.List {
			size[e.ID] = max(e.Size, 0)
		}
	}
	var out [][2]int
	lo, used := 0, int64(0)
	for i, id := range ids {
		s := size[string(id)]
		if i > lo && (i-lo == st.s.maxObjectsInGet || used+s > fetchBudget) {
			out = append(out, [2]int{lo, i})
			lo, used = i, 0
		}
		used += s
	}
	if lo < len(ids) {
		out = append(out, [2]int{lo, len(ids)})
	}
	return out, nil
}

func (st *Store) fetchRange(ctx context.Context, mb string, ids []hub.ID, out []hub.Body, lo, hi int) error {
	want := make([]string, hi-lo)
	for i := range want {
		want[i] = string(ids[lo+i])
	}
	var r struct {
		List []emailBody `json:"list"`
	}
	err := st.request(ctx, call{"Email/get", map[string]any{
		"accountId": st.s.accountID, "ids": want, "properties": bodyProperties,
		"fetchTextBodyValues": true,
	}, &r})
	if err != nil {
		return err
	}
	got := make(map[string]*emailBody, len(r.List))
	for i := range r.List {
		got[r.List[i].ID] = &r.List[i]
	}
	for i := lo; i < hi; i++ {
		out[i] = hub.Body{ID: ids[i]}
		e := got[string(ids[i])]
		if e == nil || !e.MailboxIDs[mb] {
			out[i].Err = fmt.Errorf("%w: %s", hub.ErrNotFound, ids[i])
			continue
		}
		out[i].Channel, out[i].Envelope, out[i].Err = st.decode(ctx, e)
		if out[i].Err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			out[i].Envelope = nil
		}
	}
	return nil
}

// decode reads one Email's channel and envelope (§10.4).
func (st *Store) decode(ctx context.Context, e *emailBody) (string, []byte, error) {
	ch, ok := (&emailMeta{Channel: e.Channel}).channel()
	if !ok {
		return "", nil, fmt.Errorf("%w: no %s header", hub.ErrNotEnvelope, hub.HeaderChannel)
	}
	version := ""
	if e.Version != nil {
		version, _ = unfoldTrim(*e.Version)
	}
	if err := hub.CheckVersion(hub.Header{"tandem-version": {version}}); err != nil {
		return ch, nil, err
	}
	if err := hub.CheckBodyHeader(bodyHeader(e)); err != nil {
		return ch, nil, err
	}
	if len(e.TextBody) != 1 {
		return ch, nil, fmt.Errorf("%w: %d text parts", hub.ErrNotEnvelope, len(e.TextBody))
	}
	v, ok := e.BodyValues[e.TextBody[0].PartID]
	if ok && !v.IsEncodingProblem && !v.IsTruncated {
		env, err := hub.DecodeText(v.Value)
		return ch, env, err
	}
	// §10.2 fetch: the server could not decode the body; read the raw message.
	if e.BlobID == "" {
		return ch, nil, badResponse("Email/get", "email %s has no blobId", e.ID)
	}
	raw, err := st.c.download(ctx, st.s, e.BlobID)
	if err != nil {
		return ch, nil, err
	}
	m, err := hub.ParseMessage(raw)
	if err != nil {
		return ch, nil, err
	}
	return m.Channel, m.Envelope, nil
}

// Destroy removes messages permanently with Email/set destroy (§10.2), in
// batches of maxObjectsInSet. Ids already gone (notFound) are not an error.
func (st *Store) Destroy(ctx context.Context, ids []hub.ID) error {
	if err := st.check(); err != nil {
		return err
	}
	for _, b := range batches(len(ids), st.s.maxObjectsInSet) {
		want := make([]string, 0, b[1]-b[0])
		for _, id := range ids[b[0]:b[1]] {
			want = append(want, string(id))
		}
		var set setResp
		err := st.request(ctx, call{"Email/set", map[string]any{"accountId": st.s.accountID, "destroy": want}, &set})
		if err != nil {
			return wrapOp("destroy", err)
		}
		for _, id := range want {
			if e, ok := set.NotDestroyed[id]; ok && e.Type != "notFound" {
				return wrapOp("destroy", &SetError{Method: "Email/set", ID: id, Type: e.Type, Description: e.Description})
			}
		}
	}
	return nil
}

// bodyHeader is the Content-Type and Content-Transfer-Encoding fields of
// an Email, every instance, read as an IMAP reader reads them, for
// hub.CheckBodyHeader: one set of rules for both bindings (a JMAP server
// would decode a multipart or oddly typed body anyway, picking a part; an
// IMAP reader sees the whole body). Decision:
// docs/decisions/tandem-hub-one-reading.md.
func bodyHeader(e *emailBody) hub.Header {
	h := hub.Header{}
	for name, raws := range map[string][]string{"content-type": e.CType, "content-transfer-encoding": e.CTE} {
		for _, raw := range raws {
			v, _ := unfoldTrim(raw)
			h[name] = append(h[name], v)
		}
	}
	return h
}
